package core

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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

func encodeSidecar(id string, md map[string]string) []byte {
	if md == nil {
		md = map[string]string{}
	}
	b, err := json.MarshalIndent(sidecar{MessageID: id, Metadata: md}, "", "  ")
	if err != nil {
		panic(err) // strings and a string map always marshal
	}
	return append(b, '\n')
}

// decodeSidecar parses a sidecar. Unknown top-level keys are allowed (other
// producers may add them); message_id must be a string when present and
// metadata an object of strings.
func decodeSidecar(b []byte) (id string, md map[string]string, err error) {
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
