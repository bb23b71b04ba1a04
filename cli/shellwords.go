package cli

import (
	"os"
	"strings"
)

// shellLine reads a command line as bash does for completion: words split
// at unquoted blanks and operators, quotes and backslashes removed,
// $NAME, ${NAME} and a leading ~ expanded from the environment.
type shellLine struct {
	words []string        // finished words, then the one at the end
	word  strings.Builder // value of the word being read
	raw   strings.Builder // its text as typed
	quote byte            // the quote open at the end: 0, ' or "
	in    bool            // inside a word
}

// splitShellLine returns the words of line, the last being the word that
// ends at its end ("" after a blank), and that word's raw text.
func splitShellLine(line string) (words []string, raw string) {
	var l shellLine
	l.scan(line)
	return append(l.words, l.word.String()), l.raw.String()
}

// dequote returns the value of s, part of one shell word, and the quote
// still open at its end.
func dequote(s string) (string, byte) {
	var l shellLine
	l.scan(s)
	return l.word.String(), l.quote
}

func (l *shellLine) scan(s string) {
	for i := 0; i < len(s); i++ {
		if l.quote == 0 && strings.IndexByte(" \t\n;|&<>()", s[i]) >= 0 {
			if l.in {
				l.words = append(l.words, l.word.String())
				l.word.Reset()
				l.raw.Reset()
				l.in = false
			}
			continue
		}
		end := l.char(s, i)
		l.raw.WriteString(s[i : end+1])
		l.in = true
		i = end
	}
}

// char reads the character at s[i] inside a word and returns the index of
// the last byte it took.
func (l *shellLine) char(s string, i int) int {
	c := s[i]
	switch {
	case l.quote == '\'' && c == '\'', l.quote == '"' && c == '"':
		l.quote = 0
	case l.quote == 0 && (c == '\'' || c == '"'):
		l.quote = c
	case l.quote != '\'' && c == '\\':
		return l.backslash(s, i)
	case l.quote != '\'' && c == '$':
		return l.expand(s, i)
	case l.quote == 0 && c == '~' && !l.in && (i+1 == len(s) || s[i+1] == '/'):
		l.word.WriteString(os.Getenv("HOME"))
	default:
		l.word.WriteByte(c)
	}
	return i
}

// backslash reads the backslash at s[i]: it quotes the next character,
// inside double quotes only $ ` " \ and a newline.
func (l *shellLine) backslash(s string, i int) int {
	switch {
	case i+1 == len(s): // the last key typed: what it quotes comes next
		return i
	case l.quote == 0 || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0:
		l.word.WriteByte(s[i+1])
		return i + 1
	}
	l.word.WriteByte('\\')
	return i
}

// expand writes the value of the variable named at s[i] ($NAME or
// ${NAME}), or a plain $, and returns the index of its last byte.
func (l *shellLine) expand(s string, i int) int {
	rest := s[i+1:]
	braced := strings.HasPrefix(rest, "{")
	if braced {
		rest = rest[1:]
	}
	n := 0
	for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n == 0 || braced && (n == len(rest) || rest[n] != '}') {
		l.word.WriteByte('$')
		return i
	}
	l.word.WriteString(os.Getenv(rest[:n]))
	if braced {
		return i + n + 2
	}
	return i + n
}

// shellQuote quotes s for the shell inside the given open quote (0 for
// none), so that bash reads back exactly s.
func shellQuote(s string, quote byte) string {
	switch quote {
	case '\'':
		return strings.ReplaceAll(s, "'", `'\''`)
	case '"':
		special := "\"$`\\"
		return escapeBytes(s, special)
	}
	return escapeBytes(s, " \t\n\\'\"$`<>|&;()*?[]{}!#~")
}

func escapeBytes(s, special string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(special, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
