package bridge

import (
	"fmt"
	"strings"

	"github.com/mqb-project/mqb/core/option"
)

// schemeHint is "; did you mean dir-spool://?" when the scheme of raw (the
// text before "://", valid URL or not) is a near miss of a registered
// scheme, and "" otherwise.
func (e *Env) schemeHint(raw string) string {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return ""
	}
	if _, known := e.ConnectorForScheme(strings.ToLower(scheme)); known {
		return ""
	}
	if c := option.Closest(scheme, e.Schemes()); c != "" {
		return fmt.Sprintf("; did you mean %s://?", c)
	}
	return ""
}

// urlHint says what may be wrong with a URL that does not parse: a near
// miss of a scheme, or else characters a URL holds only percent-encoded.
func (e *Env) urlHint(raw string) string {
	if h := e.schemeHint(raw); h != "" {
		return h
	}
	return `; write a "/", "?", "@", "%" or space inside a user name, password or value as %2F, %3F, %40, %25 or %20`
}

// nameHint is "; did you mean dir_spool?" when name is a near miss of a
// connector name, and "" otherwise.
func (e *Env) nameHint(name string) string {
	if c := option.Closest(name, e.Names()); c != "" {
		return fmt.Sprintf("; did you mean %s?", c)
	}
	return ""
}
