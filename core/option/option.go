// Package option is the option table shared by every connector: a Schema
// lists the Fields of one connector, and the same Schema decodes a URL query
// and a YAML map into Values, so the two spellings cannot drift apart. A bad
// option is an *Error that names the valid choices. It uses only the
// standard library, so a connector or backend written outside this project
// inherits no dependency from it.
package option

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is matched by every *Error: an option with an unknown name, a
// value of the wrong type, or a value outside its allowed set.
var ErrInvalid = errors.New("invalid option")

// Error is the error for a bad option.
type Error struct {
	Field string   // the option name as given
	Value string   // the value as given, if any
	Msg   string   // what is wrong
	Valid []string // the valid names or values, when that helps
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "option %q", e.Field)
	if e.Value != "" {
		fmt.Fprintf(&b, " = %q", e.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if len(e.Valid) > 0 {
		b.WriteString(" (valid: ")
		b.WriteString(strings.Join(e.Valid, ", "))
		b.WriteString(")")
		given := e.Value
		if given == "" {
			given = e.Field
		}
		if c := Closest(given, e.Valid); c != "" {
			fmt.Fprintf(&b, "; did you mean %q?", c)
		}
	}
	return b.String()
}

// Is reports ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// FieldType is the type of an option field.
type FieldType string

// The field types a Schema decodes.
const (
	TypeString   FieldType = "string"
	TypeInt      FieldType = "int"
	TypeBool     FieldType = "bool"
	TypeEnum     FieldType = "enum"
	TypeDuration FieldType = "duration"
	TypeFileMode FieldType = "filemode" // octal, e.g. 0600
)

// Field describes one option: the same name in a URL query and in YAML.
type Field struct {
	Name     string
	Type     FieldType
	Default  string   // the default as it would be written in a URL; "" = none
	Enum     []string // allowed values for TypeEnum
	Min, Max int64    // bounds for TypeInt (Max 0 = no upper bound)
	Required bool
	Secret   bool   // a credential: its value is never printed
	Doc      string // one or two sentences for the reference
}

// Schema is the table of fields of one connector. One Schema decodes both URL
// queries and YAML maps, so the two spellings cannot drift apart.
type Schema struct {
	Name   string // the YAML key, e.g. dir_spool
	Fields []Field
}

// Values is a decoded, validated set of options with defaults applied.
type Values struct {
	schema *Schema
	vals   map[string]any
	set    map[string]bool
}

// Field returns the field named name.
func (s *Schema) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Names returns the field names in sorted order.
func (s *Schema) Names() []string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	sort.Strings(names)
	return names
}

// DecodeMap decodes a map as YAML produces it: strings, ints, floats with
// integral values, and bools, or their string spellings.
func (s *Schema) DecodeMap(m map[string]any) (*Values, error) {
	v := &Values{schema: s, vals: make(map[string]any, len(s.Fields)), set: make(map[string]bool, len(m))}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := s.Field(k)
		if !ok {
			return nil, &Error{Field: k, Msg: fmt.Sprintf("unknown %s option", s.Name), Valid: s.Names()}
		}
		val, err := f.decode(m[k])
		if err != nil {
			return nil, err
		}
		v.vals[k] = val
		v.set[k] = true
	}
	for _, f := range s.Fields {
		if _, ok := v.vals[f.Name]; ok {
			continue
		}
		if f.Required {
			return nil, &Error{Field: f.Name, Msg: "is required"}
		}
		val, err := f.decode(f.Default)
		if err != nil {
			panic(fmt.Sprintf("schema %s: bad default for %s: %v", s.Name, f.Name, err))
		}
		v.vals[f.Name] = val
	}
	return v, nil
}

// decode checks raw, as a URL or YAML gives it, against the field's type
// and returns the value Values holds.
func (f Field) decode(raw any) (any, error) {
	dec, ok := decoders[f.Type]
	if !ok {
		return nil, f.bad(raw, "has an unsupported type")
	}
	return dec(f, raw)
}

// bad returns the error for a value the field refuses.
func (f Field) bad(raw any, msg string) error {
	return &Error{Field: f.Name, Value: fmt.Sprint(raw), Msg: msg, Valid: f.Enum}
}

// decoders decode one field type each.
var decoders = map[FieldType]func(f Field, raw any) (any, error){
	TypeString:   decodeString,
	TypeEnum:     decodeEnum,
	TypeBool:     decodeBool,
	TypeInt:      decodeInt,
	TypeDuration: decodeDuration,
	TypeFileMode: decodeFileMode,
	TypeSize:     decodeSize,
}

func decodeString(f Field, raw any) (any, error) {
	if raw == nil {
		return "", nil
	}
	text, ok := raw.(string)
	if !ok {
		return nil, f.bad(raw, "expects a string")
	}
	return text, nil
}

func decodeEnum(f Field, raw any) (any, error) {
	text, ok := raw.(string)
	if !ok {
		return nil, f.bad(raw, "expects one of the listed values")
	}
	if !slices.Contains(f.Enum, text) {
		return nil, f.bad(raw, "is not an allowed value")
	}
	return text, nil
}

func decodeBool(f Field, raw any) (any, error) {
	switch x := raw.(type) {
	case bool:
		return x, nil
	case string:
		if b, err := strconv.ParseBool(x); err == nil {
			return b, nil
		}
	}
	return nil, f.bad(raw, "expects true or false")
}

func decodeInt(f Field, raw any) (any, error) {
	n, msg := wholeNumber(raw)
	if msg != "" {
		return nil, f.bad(raw, msg)
	}
	if n < f.Min || (f.Max != 0 && n > f.Max) {
		if f.Max != 0 {
			return nil, f.bad(raw, fmt.Sprintf("must be from %d to %d", f.Min, f.Max))
		}
		return nil, f.bad(raw, fmt.Sprintf("must be at least %d", f.Min))
	}
	return int(n), nil
}

// wholeNumber reads an integer as YAML (int, uint64, float64 with an
// integral value) or a URL (text) gives it; msg says what is wrong.
func wholeNumber(raw any) (n int64, msg string) {
	switch x := raw.(type) {
	case int:
		return int64(x), ""
	case int64:
		return x, ""
	case uint64:
		if x > math.MaxInt64 {
			return 0, "is too large"
		}
		return int64(x), ""
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, "expects a whole number"
		}
		return int64(x), ""
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, "expects a whole number"
		}
		return n, ""
	}
	return 0, "expects a whole number"
}

func decodeDuration(f Field, raw any) (any, error) {
	text, ok := raw.(string)
	d, err := time.ParseDuration(text)
	if !ok || err != nil || d < 0 {
		return nil, f.bad(raw, "expects a duration such as 250ms or 2s")
	}
	return d, nil
}

func decodeFileMode(f Field, raw any) (any, error) {
	if n, ok := raw.(int); ok { // YAML reads 0600 as the octal number 384
		raw = strconv.FormatInt(int64(n), 8)
	}
	text, ok := raw.(string)
	m, err := strconv.ParseUint(text, 8, 32)
	if !ok || err != nil || m > 0o777 {
		return nil, f.bad(raw, "expects an octal mode such as 0600")
	}
	return uint32(m), nil
}

// String returns a string or enum field.
func (v *Values) String(name string) string { return v.vals[name].(string) }

// Int returns an int field.
func (v *Values) Int(name string) int { return v.vals[name].(int) }

// Bool returns a bool field.
func (v *Values) Bool(name string) bool { return v.vals[name].(bool) }

// Duration returns a duration field.
func (v *Values) Duration(name string) time.Duration { return v.vals[name].(time.Duration) }

// FileMode returns a file mode field.
func (v *Values) FileMode(name string) uint32 { return v.vals[name].(uint32) }

// IsSet reports whether the user gave the field (rather than its default).
func (v *Values) IsSet(name string) bool { return v.set[name] }
