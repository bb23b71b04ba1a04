package core

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one message written to a spool.
type Message struct {
	// ID identifies the message end to end. Producer.Write assigns a UUIDv7
	// (32 lowercase hex digits) when it is empty.
	ID string
	// Metadata holds string key/value pairs, stored in the sidecar.
	Metadata map[string]string
	// Payload is stored byte for byte as the payload file.
	Payload []byte
	// Body, when not nil, is read for the payload instead: exactly Size
	// bytes, and it must end there. Payload must then be nil. A Body that
	// fails, or holds another number of bytes, fails the write (an error
	// matching ErrPayloadSize for the size) and leaves no chunk behind.
	// A Body from Delivery.Open, or an *os.File, is copied in the kernel
	// where the backend can (see docs/architecture.md).
	Body io.Reader
	// Size is the length of Body; ignored when Body is nil.
	Size int64
}

// sidecar is the exact on-disk shape of a metadata sidecar.
type sidecar struct {
	MessageID string            `json:"message_id"`
	Metadata  map[string]string `json:"metadata"`
}

// NewMessageID returns a fresh UUIDv7 as 32 lowercase hex digits: 48 bits of
// Unix milliseconds, then version, variant and random bits, so ids sort by
// creation time.
func NewMessageID() string {
	var u [16]byte
	binary.BigEndian.PutUint64(u[0:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(u[6:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	return hex.EncodeToString(u[:])
}

// encodeSidecar returns the sidecar of a message: exactly the bytes of
// json.MarshalIndent(sidecar{id, md}, "", "  ") plus a newline, written by
// hand because this runs for every message.
func encodeSidecar(id string, md map[string]string) []byte {
	return appendSidecar(nil, id, md)
}

// appendSidecar appends the sidecar of a message to b.
func appendSidecar(b []byte, id string, md map[string]string) []byte {
	n := 64 + len(id)
	for k, v := range md {
		n += len(k) + len(v) + 12
	}
	b = slices.Grow(b, n)
	b = append(b, "{\n  \"message_id\": "...)
	b = appendJSONString(b, id)
	if len(md) == 0 {
		return append(b, ",\n  \"metadata\": {}\n}\n"...)
	}
	b = append(b, ",\n  \"metadata\": {"...)
	var few [16]string // on the stack for the usual few keys
	keys := few[:0]
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		b = appendJSONString(b, md[k])
	}
	return append(b, "\n  }\n}\n"...)
}

// appendJSONString appends s as encoding/json writes it (HTML-safe
// escaping). Strings that need any escaping go through encoding/json
// itself, so the bytes are always the same.
func appendJSONString(b []byte, s string) []byte {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendMarshaled(b, s)
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && (!utf8.ValidString(s) || strings.ContainsAny(s, "\u2028\u2029")) {
		return appendMarshaled(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendMarshaled(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return append(b, q...)
}

// decodeSidecar parses a sidecar. Unknown top-level keys are allowed (other
// producers may add them); message_id must be a string when present and
// metadata an object of strings. Metadata keys and values come from strs
// when it holds them (nil: none).
func decodeSidecar(b []byte, strs internTable) (id string, md map[string]string, err error) {
	if id, md, ok := decodeSidecarFast(b, strs); ok {
		return id, md, nil
	}
	return decodeSidecarJSON(b)
}

// decodeSidecarJSON is decodeSidecar for any input, with precise errors.
func decodeSidecarJSON(b []byte) (id string, md map[string]string, err error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return "", nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return "", nil, errors.New("trailing data after the JSON object")
	}
	if v, ok := raw["message_id"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &id); err != nil {
			return "", nil, errors.New(`"message_id" is not a string`)
		}
	}
	md = map[string]string{}
	if v, ok := raw["metadata"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &md); err != nil {
			return "", nil, errors.New(`"metadata" is not an object of string values`)
		}
	}
	return id, md, nil
}

// decodeSidecarFast decodes the common sidecar: an object with at most the
// keys message_id (a string or null) and metadata (an object of strings, or
// null), once each, with strings that hold no escapes and are valid UTF-8.
// For anything else it reports !ok and decodeSidecarJSON decides; when ok,
// the result is what decodeSidecarJSON would return.
func decodeSidecarFast(b []byte, strs internTable) (id string, md map[string]string, ok bool) {
	s := sidecarScanner{b: b, strs: strs}
	if !s.byte('{') {
		return "", nil, false
	}
	md = map[string]string{}
	seenID, seenMD := false, false
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			key, ok := s.str()
			if !ok || !s.byte(':') {
				return "", nil, false
			}
			switch {
			case string(key) == "message_id" && !seenID:
				seenID = true
				if !s.null() {
					v, ok := s.str()
					if !ok {
						return "", nil, false
					}
					id = string(v)
				}
			case string(key) == "metadata" && !seenMD:
				seenMD = true
				if !s.null() && !s.stringMap(md) {
					return "", nil, false
				}
			default:
				return "", nil, false
			}
			if s.byte(',') {
				continue
			}
			if !s.byte('}') {
				return "", nil, false
			}
			break
		}
	}
	s.space()
	return id, md, s.i == len(s.b)
}

// sidecarScanner reads the restricted JSON of decodeSidecarFast.
type sidecarScanner struct {
	b    []byte
	i    int
	strs internTable
}

// internTable hands out one string for the metadata keys and values that
// sidecar after sidecar repeat (content types, sources, header names), so
// that decoding a sidecar allocates only what differs, mostly the message
// id. It keeps at most internMax strings of at most internLen bytes.
type internTable map[string]string

const (
	internMax = 256
	internLen = 64
)

// get returns b as a string, the kept one when there is one.
func (t internTable) get(b []byte) string {
	if len(b) > internLen || t == nil {
		return string(b)
	}
	if s, ok := t[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if len(t) < internMax {
		t[s] = s
	}
	return s
}

func (s *sidecarScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *sidecarScanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// byte consumes c, after white space, if it comes next.
func (s *sidecarScanner) byte(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

func (s *sidecarScanner) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// str reads a string without escapes or control characters; the bytes
// are those of s.b.
func (s *sidecarScanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	ascii := true
	for ; s.i < len(s.b); s.i++ {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(v) {
				return nil, false
			}
			return v, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// stringMap reads an object of strings into md.
func (s *sidecarScanner) stringMap(md map[string]string) bool {
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		md[s.strs.get(k)] = s.strs.get(v)
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}

// salvageSidecar returns what a sidecar that decodeSidecar refused still
// holds: the first JSON object in b, its message_id when that is a string,
// and those of its metadata values that are strings. It never fails; what
// cannot be read is left out.
func salvageSidecar(b []byte) (id string, md map[string]string) {
	md = map[string]string{}
	var raw map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(b)).Decode(&raw) != nil {
		return "", md
	}
	if v, ok := raw["message_id"]; ok {
		_ = json.Unmarshal(v, &id) // left "" when it is not a string
	}
	var fields map[string]json.RawMessage
	if v, ok := raw["metadata"]; ok && json.Unmarshal(v, &fields) == nil {
		for k, v := range fields {
			var s string
			if string(v) != "null" && json.Unmarshal(v, &s) == nil {
				md[k] = s
			}
		}
	}
	return id, md
}
