package bridge

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntaxHint improves a YAML syntax error. The parser names the line
// where the construct it was in began, often above the mistake (a quote
// left open, a key indented by one space too few, a tab): when a line of
// src shows one of those mistakes, the error names that line and says
// what is wrong there, keeping the parser's words after it.
func yamlSyntaxHint(src []byte, err error) error {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	line, hint := yamlMistake(string(src))
	if line == 0 {
		return nil
	}
	parserLine, _ := strconv.Atoi(m[1])
	if line == parserLine {
		return fmt.Errorf("line %d: %s (%s)", line, hint, m[2])
	}
	return fmt.Errorf("line %d: %s (the YAML parser stopped at line %d: %s)", line, hint, parserLine, m[2])
}

// yamlMistake returns the first line of src that indents with a tab, leaves
// a quote open, or is indented to no enclosing level, and what is wrong
// with it; 0 when it finds none.
func yamlMistake(src string) (int, string) {
	indents := []int{0} // the indentation of the enclosing block levels
	blockScalar := -1   // indentation of a key whose value is a | or > block
	for i, l := range strings.Split(src, "\n") {
		n := i + 1
		body := strings.TrimLeft(l, " ")
		indent := len(l) - len(body)
		if strings.HasPrefix(body, "\t") {
			return n, "a tab indents this line; YAML indents with spaces only"
		}
		if body == "" || strings.HasPrefix(body, "#") {
			continue
		}
		if blockScalar >= 0 && indent > blockScalar {
			continue
		}
		blockScalar = -1
		levels := spaces(indents)
		popped := false
		for len(indents) > 1 && indent < indents[len(indents)-1] {
			indents, popped = indents[:len(indents)-1], true
		}
		switch top := indents[len(indents)-1]; {
		case indent > top && popped, indent < top:
			return n, fmt.Sprintf("indented by %d space(s), which lines up with no enclosing level (%s)", indent, levels)
		case indent > top:
			indents = append(indents, indent)
		}
		if q := openQuote(body); q != 0 {
			return n, fmt.Sprintf("the %c quote opened on this line is not closed on it", q)
		}
		if v := strings.TrimSpace(body); strings.HasSuffix(v, "|") || strings.HasSuffix(v, ">") || strings.HasSuffix(v, "|-") || strings.HasSuffix(v, ">-") {
			blockScalar = indent
		}
	}
	return 0, ""
}

// openQuote returns the quote character left open at the end of s, 0 if
// none. A quote opens a scalar only where one may start; a # after a space
// outside quotes starts a comment.
func openQuote(s string) byte {
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '"' && c == '\\':
			i++ // an escaped character
		case q != 0 && c == q:
			q = 0 // in single quotes, '' is an escaped quote: closing and reopening is the same
		case q == 0 && (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" :[{,-", s[i-1]) >= 0):
			q = c
		case q == 0 && c == '#' && (i == 0 || s[i-1] == ' '):
			return 0
		}
	}
	return q
}

func spaces(indents []int) string {
	s := make([]string, len(indents))
	for i, n := range indents {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
