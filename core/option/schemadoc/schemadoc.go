// Package schemadoc renders a connector's option table (an option.Schema) for
// people: the Markdown field reference under docs/reference and the plain
// text of `mqb spool fields`. Both come from the same table as the decoder,
// so the documentation cannot drift from what the code accepts.
//
// The reference pages are checked by tests:
// bridge/connectors/dirspool/reference_test.go for the directory spool and
// bridge/reference_test.go for the other connectors.
// Run them with -update to rewrite the generated part of a page.
package schemadoc

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mqb-project/mqb/core/option"
)

// Allowed describes in words the values field f accepts.
func Allowed(f option.Field) string {
	switch f.Type {
	case option.TypeEnum:
		return strings.Join(f.Enum, ", ")
	case option.TypeBool:
		return "true, false"
	case option.TypeInt:
		if f.Max != 0 {
			return fmt.Sprintf("%d to %d", f.Min, f.Max)
		}
		return fmt.Sprintf("%d or more", f.Min)
	case option.TypeDuration:
		return "a duration: 250ms, 2s, 1m30s"
	case option.TypeFileMode:
		return "octal, 0000 to 0777"
	case option.TypeString:
		if f.Required {
			return "text (required)"
		}
		return "text"
	}
	return string(f.Type)
}

// Default returns the default of f as a reference shows it: "required" for
// a required field, "(empty)" for an empty default, otherwise the value.
func Default(f option.Field) string {
	switch {
	case f.Required:
		return "required"
	case f.Default == "":
		return "(empty)"
	}
	return f.Default
}

// YAMLValue returns value written as the YAML value of field f: strings and
// file modes quoted, numbers, booleans, durations and enum values bare.
func YAMLValue(f option.Field, value string) string {
	switch f.Type {
	case option.TypeString, option.TypeFileMode:
		return strconv.Quote(value)
	}
	return value
}

// QueryValue escapes value for a URL query the way a person would write it:
// only the characters that would change the meaning of the query are
// escaped, so {seq:012} stays readable.
func QueryValue(value string) string {
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("%&+#=?;\"'<>\\`", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Refusal is a setting the decoder refuses, with the error it gives.
type Refusal struct {
	Field   string // the field the error names
	Setting string // as written by the user, e.g. a URL query
	Err     string // the error text the code produced
}

// Page describes the generated part of a connector's reference page.
type Page struct {
	Schema *option.Schema

	// URL returns a URL that sets field f to value (and any other field its
	// connector needs to parse). Nil: the field has no URL spelling.
	URL func(f option.Field, value string) string

	// Examples holds the value to show for a field; fields without one
	// show their default (or, for a boolean, its opposite).
	Examples map[string]string

	// Allowed describes the allowed values of a field in Markdown where the
	// type alone says too little (a string with a required shape).
	Allowed map[string]string

	// Refused lists settings that fail, shown under the field they name
	// (or at the end when that is not a field of the schema).
	Refused []Refusal
}

// Example returns the value the page shows for f.
func (p Page) Example(f option.Field) string {
	if v, ok := p.Examples[f.Name]; ok {
		return v
	}
	if f.Type == option.TypeBool {
		if f.Default == "true" {
			return "false"
		}
		return "true"
	}
	if f.Type == option.TypeEnum {
		for _, v := range f.Enum {
			if v != f.Default {
				return v
			}
		}
	}
	return f.Default
}

// Markdown renders the page: a summary table of every field, then one
// section per field with its spellings, what it does and what is refused.
func Markdown(p Page) string {
	var b strings.Builder
	b.WriteString("| Field | Type | Default | Allowed values |\n|---|---|---|---|\n")
	for _, f := range p.Schema.Fields {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n",
			f.Name, anchor(f.Name), f.Type, codeOrWord(Default(f)), p.allowed(f))
	}
	byField := map[string][]Refusal{}
	var other []Refusal
	for _, r := range p.Refused {
		if _, ok := p.Schema.Field(r.Field); ok {
			byField[r.Field] = append(byField[r.Field], r)
		} else {
			other = append(other, r)
		}
	}
	for _, f := range p.Schema.Fields {
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n", f.Name, mdText(f.Doc))
		fmt.Fprintf(&b, "- Type: %s. Default: %s. Allowed: %s.\n", f.Type, codeOrWord(Default(f)), p.allowed(f))
		ex := p.Example(f)
		if p.URL != nil {
			if u := p.URL(f, ex); u != "" {
				fmt.Fprintf(&b, "- URL: `%s`\n", u)
			}
		}
		fmt.Fprintf(&b, "- YAML: `%s: %s`\n", f.Name, YAMLValue(f, ex))
		for i, r := range byField[f.Name] {
			if i == 0 {
				b.WriteString("- Refused:\n")
			}
			fmt.Fprintf(&b, "  - `%s`: %s\n", r.Setting, mdText(r.Err))
		}
	}
	if len(other) > 0 {
		b.WriteString("\n### Other refused settings\n\n")
		for _, r := range other {
			fmt.Fprintf(&b, "- `%s`: %s\n", r.Setting, mdText(r.Err))
		}
	}
	return b.String()
}

func anchor(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, " ", "-"))
}

func codeOrWord(s string) string {
	switch s {
	case "required", "(empty)":
		return s
	}
	return "`" + s + "`"
}

// mdText escapes the characters that Markdown would read as markup in
// running text. Code spans (between backticks) are kept as they are.
func mdText(s string) string {
	var b strings.Builder
	code := false
	for _, r := range s {
		if r == '`' {
			code = !code
		} else if !code && strings.ContainsRune("\\*<|[]", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p Page) allowed(f option.Field) string {
	if a, ok := p.Allowed[f.Name]; ok {
		return a
	}
	return allowedMarkdown(f)
}

func allowedMarkdown(f option.Field) string {
	if f.Type == option.TypeEnum || f.Type == option.TypeBool {
		var vals []string
		for _, v := range strings.Split(Allowed(f), ", ") {
			vals = append(vals, "`"+v+"`")
		}
		return strings.Join(vals, ", ")
	}
	return Allowed(f)
}

// Markers delimit the generated part of a reference page.
const (
	Begin = "<!-- fields:begin (generated from the option table; do not edit) -->"
	End   = "<!-- fields:end -->"
)

// Splice returns doc with the text between Begin and End replaced by
// generated. It fails when the markers are missing or out of order.
func Splice(doc, generated string) (string, error) {
	i := strings.Index(doc, Begin)
	j := strings.Index(doc, End)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %q and %q not found in order", Begin, End)
	}
	return doc[:i+len(Begin)] + "\n\n" + strings.TrimSpace(generated) + "\n\n" + doc[j:], nil
}

// AllowedText returns the allowed values of f as plain text: the page's
// description when it has one, otherwise Allowed(f).
func (p Page) AllowedText(f option.Field) string {
	if a, ok := p.Allowed[f.Name]; ok {
		return strings.ReplaceAll(a, "`", "")
	}
	return Allowed(f)
}

// WriteText writes the fields of p.Schema as aligned plain text for a
// terminal: one line per field (name, type, default, allowed values)
// followed by its description, indented and wrapped at width columns.
func WriteText(w io.Writer, p Page, width int) error {
	s := p.Schema
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tTYPE\tDEFAULT\tALLOWED")
	for _, f := range s.Fields {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Type, Default(f), p.AllowedText(f))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range s.Fields {
		if _, err := fmt.Fprintf(w, "\n%s\n", f.Name); err != nil {
			return err
		}
		for _, line := range wrap(f.Doc, width-4) {
			if _, err := fmt.Fprintf(w, "    %s\n", line); err != nil {
				return err
			}
		}
	}
	return nil
}

func wrap(text string, width int) []string {
	if width < 20 {
		width = 20
	}
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len(word) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
