// Package records frames messages in the record formats shared by the file,
// stdin/stdout and drop-zone connectors: json (JSON Lines), csv (a header
// row, then one JSON object per record), lines and raw (the whole input is
// one record).
package records

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/mqb-project/mqb/core/option"

	"github.com/mqb-project/mqb/bridge"
)

// The formats.
const (
	JSON  = "json"
	CSV   = "csv"
	Lines = "lines"
	Raw   = "raw"
)

// Formats lists the formats, for option tables.
var Formats = []string{JSON, CSV, Lines, Raw}

// ContentType returns the content_type metadata of a record in format.
func ContentType(format string) string {
	switch format {
	case JSON, CSV:
		return "application/json"
	case Lines:
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// Extension returns the usual file name extension of format.
func Extension(format string) string {
	switch format {
	case JSON:
		return ".jsonl"
	case CSV:
		return ".csv"
	case Lines:
		return ".txt"
	}
	return ".bin"
}

// FormatField is the format option of a record-oriented connector.
func FormatField(def string) option.Field {
	return option.Field{Name: "format", Type: option.TypeEnum, Default: def, Enum: Formats,
		Doc: "json: one JSON document per line, validated and kept byte for byte; csv: a header row, then each record becomes a JSON object of its named fields; lines: each line is a message; raw: the whole input is one message."}
}

// DelimiterField is the CSV field delimiter option.
var DelimiterField = option.Field{Name: "delimiter", Type: option.TypeString, Default: ",",
	Doc: "CSV field delimiter, one character (format=csv only)."}

// Delimiter checks and returns the delimiter option.
func Delimiter(v *option.Values) (rune, error) {
	s := v.String("delimiter")
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || size != len(s) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
		return 0, &option.Error{Field: "delimiter", Value: s, Msg: "must be a single character other than a quote or a line break"}
	}
	return r, nil
}

// Record is one record read from an input.
type Record struct {
	Payload []byte
	Line    int // 1-based line where the record starts; 0 for raw
}

// Reader reads records of one format.
type Reader struct {
	name   string // for errors: the file path or "stdin"
	format string
	delim  rune // format=csv
	br     *countingReader
	buf    *bufio.Reader
	csv    *csv.Reader
	header []string
	line   int
	done   bool
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewReader reads records in format from r; name appears in errors.
func NewReader(r io.Reader, format, name string, delimiter rune) *Reader {
	rd := &Reader{format: format, delim: delimiter, br: &countingReader{}}
	rd.buf = bufio.NewReaderSize(rd.br, 64<<10)
	rd.Reset(r, name)
	return rd
}

// Reset makes the Reader read records from r, a new input named name, in
// the same format, with the same buffer: a drop zone of many small files
// makes no 64 KiB buffer per file. The records it returned before stay
// valid (none of them points into the buffer); the old input is not read
// again.
func (r *Reader) Reset(src io.Reader, name string) {
	*r.br = countingReader{r: src}
	r.buf.Reset(r.br)
	r.name, r.csv, r.header, r.line, r.done = name, nil, nil, 0, false
	if r.format == CSV {
		r.csv = csv.NewReader(r.buf)
		r.csv.Comma = r.delim
		r.csv.ReuseRecord = true
	}
}

// Offset returns about how many input bytes have been consumed so far, for
// progress displays.
func (r *Reader) Offset() int64 { return r.br.n - int64(r.buf.Buffered()) }

func (r *Reader) malformed(line int, err error) error {
	return &bridge.RecordError{Path: r.name, Line: line, Err: err}
}

// Next returns the next record, io.EOF after the last one, or a
// *bridge.RecordError for a record that cannot be parsed (never skipped:
// every later call returns the same error).
func (r *Reader) Next() (Record, error) {
	if r.done {
		return Record{}, io.EOF
	}
	switch r.format {
	case Raw:
		r.done = true
		b, err := io.ReadAll(r.buf)
		if err != nil {
			return Record{}, fmt.Errorf("read %s: %w", r.name, err)
		}
		return Record{Payload: b}, nil
	case CSV:
		return r.nextCSV()
	}
	for {
		b, err := r.buf.ReadBytes('\n')
		if len(b) == 0 && err == io.EOF {
			r.done = true
			return Record{}, io.EOF
		}
		if err != nil && err != io.EOF {
			return Record{}, fmt.Errorf("read %s: %w", r.name, err)
		}
		r.line++
		b = bytes.TrimSuffix(b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		if r.format == JSON {
			if len(bytes.TrimSpace(b)) == 0 {
				continue // a blank line holds no document
			}
			if !json.Valid(b) {
				r.done = true
				return Record{}, r.malformed(r.line, fmt.Errorf("not a JSON document (format=json reads one JSON document per line): %s", jsonProblem(b)))
			}
		}
		return Record{Payload: b, Line: r.line}, nil
	}
}

// jsonProblem says what is wrong with a line that is not one JSON document.
func jsonProblem(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("unexpected data after the document at column %d", dec.InputOffset()+1)
}

func (r *Reader) nextCSV() (Record, error) {
	if r.header == nil {
		h, err := r.csv.Read()
		if err == io.EOF {
			r.done = true
			return Record{}, io.EOF
		}
		if err != nil {
			r.done = true
			return Record{}, r.csvError(err)
		}
		h = append([]string(nil), h...)
		if len(h) > 0 {
			h[0] = string(bytes.TrimPrefix([]byte(h[0]), []byte("\xef\xbb\xbf"))) // a UTF-8 byte order mark
		}
		seen := map[string]bool{}
		for i, name := range h {
			if name == "" {
				r.done = true
				return Record{}, r.malformed(1, fmt.Errorf("header column %d has no name", i+1))
			}
			if seen[name] {
				r.done = true
				return Record{}, r.malformed(1, fmt.Errorf("header names column %q twice", name))
			}
			seen[name] = true
		}
		r.header = h
	}
	rec, err := r.csv.Read()
	if err == io.EOF {
		r.done = true
		return Record{}, io.EOF
	}
	if err != nil {
		r.done = true
		return Record{}, r.csvError(err)
	}
	line, _ := r.csv.FieldPos(0)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range r.header {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, name)
		b.WriteByte(':')
		writeJSONString(&b, rec[i])
	}
	b.WriteByte('}')
	return Record{Payload: b.Bytes(), Line: line}, nil
}

func (r *Reader) csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = fmt.Errorf("record has a different number of fields than the %d-column header", len(r.header))
		}
		return r.malformed(pe.StartLine, msg)
	}
	return fmt.Errorf("read %s: %w", r.name, err)
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode adds a newline
}

// Encoder turns payloads into the bytes of a format. For csv it writes the
// header row before the first record; the header comes from the first
// record's keys unless one is given (a file being appended to).
type Encoder struct {
	format string
	comma  rune
	header []string
	index  map[string]int
	start  bool // the output is empty: a csv header is due
}

// NewEncoder returns an encoder of format. header is the existing csv
// header of the output, nil when the output is empty or not csv.
func NewEncoder(format string, delimiter rune, header []string) *Encoder {
	e := &Encoder{format: format, comma: delimiter}
	e.setHeader(header)
	e.start = header == nil
	return e
}

func (e *Encoder) setHeader(h []string) {
	e.header = h
	e.index = make(map[string]int, len(h))
	for i, n := range h {
		e.index[n] = i
	}
}

// Reset makes the encoder start a new, empty output (a new file).
func (e *Encoder) Reset() {
	e.setHeader(nil)
	e.start = true
}

// Batch holds the encoded bytes of some payloads; Commit records that they
// were written, so that the csv header is not written twice.
type Batch struct {
	Data   []byte
	e      *Encoder
	header []string
}

// Commit records that Data was written to the output.
func (b *Batch) Commit() {
	if b.e.format == CSV && b.header != nil {
		b.e.setHeader(b.header)
		b.e.start = false
	}
}

// Encode encodes payloads without changing the encoder's state; call
// Commit on the result once it was written. A payload the format cannot
// hold is an error matching bridge.ErrRejected that says which (ids[i]
// names payloads[i]).
func (e *Encoder) Encode(payloads [][]byte, ids []string) (*Batch, error) {
	out := &Batch{e: e}
	var buf bytes.Buffer
	var rows *csvRows
	if e.format == CSV {
		rows = &csvRows{w: csv.NewWriter(&buf), header: e.header, index: e.index, start: e.start}
		rows.w.Comma = e.comma
	}
	for i, p := range payloads {
		var err error
		switch e.format {
		case Raw:
			buf.Write(p)
		case Lines:
			if bytes.IndexByte(p, '\n') >= 0 {
				err = errors.New("payload has a line break, which format=lines cannot hold (use format=json or raw)")
			}
			buf.Write(p)
			buf.WriteByte('\n')
		case JSON:
			err = writeJSONLine(&buf, p)
		case CSV:
			err = rows.write(p)
		}
		if err != nil {
			return nil, bridge.Reject(fmt.Errorf("message %s: %w", ids[i], err))
		}
	}
	if rows != nil {
		rows.w.Flush()
		if err := rows.w.Error(); err != nil {
			return nil, err
		}
		out.header = rows.header
	}
	out.Data = buf.Bytes()
	return out, nil
}

// writeJSONLine writes a JSON payload as one line.
func writeJSONLine(buf *bytes.Buffer, p []byte) error {
	if !json.Valid(p) {
		return errors.New("payload is not a JSON document, which format=json requires (use format=lines or raw)")
	}
	if bytes.ContainsAny(p, "\r\n") {
		if err := json.Compact(buf, p); err != nil {
			return fmt.Errorf("compact JSON payload: %w", err)
		}
	} else {
		buf.Write(p)
	}
	buf.WriteByte('\n')
	return nil
}

// csvRows writes the rows of one Encode: the header first when the file
// has none yet, taken from the first object's keys.
type csvRows struct {
	w      *csv.Writer
	header []string
	index  map[string]int
	start  bool
}

// write writes a JSON object of scalar values as a row.
func (r *csvRows) write(p []byte) error {
	keys, vals, err := flatObject(p)
	if err != nil {
		return fmt.Errorf("%w (format=csv writes JSON objects of scalar values as rows)", err)
	}
	if r.start && r.header == nil {
		r.header = keys
		r.index = make(map[string]int, len(keys))
		for j, k := range keys {
			r.index[k] = j
		}
		if err := r.w.Write(r.header); err != nil {
			return fmt.Errorf("write header: %w", err)
		}
	}
	row := make([]string, len(r.header))
	for j, k := range keys {
		at, ok := r.index[k]
		if !ok {
			return fmt.Errorf("field %q is not a column of the CSV header (%s)", k, csvJoin(r.header))
		}
		row[at] = vals[j]
	}
	if err := r.w.Write(row); err != nil {
		return fmt.Errorf("write row: %w", err)
	}
	return nil
}

func csvJoin(h []string) string {
	var b bytes.Buffer
	for i, s := range h {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// flatObject parses a JSON object keeping its key order; values become their
// CSV text (strings as they are, numbers and booleans as written, null as
// empty).
func flatObject(p []byte) (keys, vals []string, err error) {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return nil, nil, errors.New("payload is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("payload is not valid JSON: %v", err)
		}
		k := kt.(string)
		if seen[k] {
			return nil, nil, fmt.Errorf("key %q appears twice", k)
		}
		seen[k] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("payload is not valid JSON: %v", err)
		}
		var v any
		_ = json.Unmarshal(raw, &v)
		var s string
		switch x := v.(type) {
		case nil:
		case string:
			s = x
		case bool:
			s = strconv.FormatBool(x)
		case float64:
			s = string(raw) // as written
		default:
			return nil, nil, fmt.Errorf("value of %q is not a scalar", k)
		}
		keys, vals = append(keys, k), append(vals, s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("payload is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, nil, errors.New("trailing data after the JSON object")
	}
	return keys, vals, nil
}

// ReadCSVHeader returns the header row of csv data r (nil when r is empty),
// so that an encoder can append to an existing file.
func ReadCSVHeader(r io.Reader, delimiter rune) ([]string, error) {
	cr := csv.NewReader(r)
	cr.Comma = delimiter
	cr.FieldsPerRecord = -1
	h, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(h) > 0 {
		h[0] = string(bytes.TrimPrefix([]byte(h[0]), []byte("\xef\xbb\xbf")))
	}
	return h, nil
}
