package bridge

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Masked is what Redact writes in place of a credential.
const Masked = "xxxxx"

var (
	// urlText matches a URL written in running text, up to the first
	// character that cannot be part of one (space, quote, angle bracket).
	urlText = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s"'<>` + "`" + `]*`)

	// secretSetting matches a credential written as name=value: a URL
	// query parameter (?password=...&) or a key=value connection string
	// (host=db password='s p'). Group 1 is kept, group 2 is the secret.
	secretSetting = regexp.MustCompile(`(?i)(\b(?:ssl)?(?:password|passwd|pwd|token|secret)\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&#'"` + "`" + `]+)`)
)

// Redact returns text fit for a log line, an error or a metrics label: every
// credential in it is replaced by xxxxx. It is the one redaction of mqb;
// every path that prints user input goes through it. It replaces:
//
//   - each of secrets wherever it appears, also URL- and JSON-escaped
//     (passwords given as YAML fields, tokens, anything FindSecrets found
//     earlier in another text);
//   - the password of every URL's user info (user:xxxxx@host), and the
//     whole user info of a URL that does not parse or whose user info a
//     bare "#" cut short, since its parts cannot be told apart;
//   - the value of password, sslpassword, token, secret... settings, as URL
//     query parameters or key=value connection strings.
//
// Redact works on the text, not on a parsed URL, so a URL that does not
// parse (a bad port, a bad % escape, an unclosed [) loses its password too.
func Redact(text string, secrets ...string) string {
	for _, s := range expandSecrets(secrets) {
		text = strings.ReplaceAll(text, s, Masked)
	}
	text = urlText.ReplaceAllStringFunc(text, redactURLText)
	return secretSetting.ReplaceAllStringFunc(text, redactSetting)
}

// redactSetting masks the value of one name=value credential. A value that
// is already masked, followed by punctuation of the sentence around it
// ("password=xxxxx: option ..."), is left alone, so that redacting twice
// gives the same text.
func redactSetting(m string) string {
	sub := secretSetting.FindStringSubmatch(m)
	if rest, ok := strings.CutPrefix(sub[2], Masked); ok && strings.Trim(rest, ":,;.)]}") == "" {
		return m
	}
	return sub[1] + Masked
}

// FindSecrets returns the credentials written in text: the password of each
// URL's user info (also in a URL that does not parse) and the values of
// password, token... settings. A command collects them from its arguments
// so that Redact can remove them from any later text, however a library
// quotes them.
func FindSecrets(text string) []string {
	var out []string
	for _, u := range urlText.FindAllString(text, -1) {
		if info, _, ok := userInfo(u); ok {
			if _, pass, has := strings.Cut(info, ":"); has && pass != "" {
				out = append(out, pass)
				if p, err := url.PathUnescape(pass); err == nil && p != pass {
					out = append(out, p)
				}
			}
		}
	}
	for _, m := range secretSetting.FindAllStringSubmatch(text, -1) {
		v := strings.Trim(m[2], "'")
		out = append(out, v)
		if p, err := url.QueryUnescape(v); err == nil && p != v {
			out = append(out, p)
		}
	}
	return out
}

// userInfo returns the user info of the URL text u and where it ends. A
// password with a bare "#", "/" or "?" ends the URL's authority before its
// "@": the URL then does not parse (the password's start reads as a bad
// port), or its "@" lands in the fragment. The user info is then taken to
// run to the last "@", which may mask more than the password, never less.
func userInfo(u string) (info string, end int, ok bool) {
	start := strings.Index(u, "://") + 3
	rest := u[start:]
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	at := strings.LastIndex(auth, "@")
	if at < 0 && auth != "" && authorityCutShort(u) {
		at = strings.LastIndex(rest, "@")
	}
	if at < 0 {
		return "", 0, false
	}
	return rest[:at], start + at, true
}

// authorityCutShort reports whether the URL text u fails to parse, or
// parses with an "@" in its fragment.
func authorityCutShort(u string) bool {
	p, err := url.Parse(u)
	return err != nil || strings.Contains(p.Fragment, "@")
}

func redactURLText(u string) string {
	info, end, ok := userInfo(u)
	if !ok || info == "" {
		return u
	}
	start := end - len(info)
	if authorityCutShort(u) { // its parts cannot be told apart
		return u[:start] + Masked + u[end:]
	}
	if user, _, has := strings.Cut(info, ":"); has {
		return u[:start] + user + ":" + Masked + u[end:]
	}
	return u
}

// expandSecrets returns the non-empty secrets with the spellings they take
// in a URL, a Go-quoted string and JSON, longest first so that a secret
// inside another one does not leave a part behind.
func expandSecrets(secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		j, _ := json.Marshal(s)
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s),
			strings.Trim(strconv.Quote(s), `"`), strings.Trim(string(j), `"`))
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// Secrets returns the credentials ep holds, for Redact: the passwords found
// in its URL or in any of its string fields (a DSN), the values of the
// fields its connector marks Secret, and the token in the user info of a
// TokenUser connector's URL. It works on endpoints that do not resolve too.
func (e *Env) Secrets(ep Endpoint) []string {
	out := FindSecrets(ep.URL)
	var c *Connector
	if ep.URL != "" {
		if u, err := url.Parse(ep.URL); err == nil {
			c, _ = e.ConnectorForScheme(strings.ToLower(u.Scheme))
			if c != nil && c.TokenUser && u.User != nil {
				if _, ok := u.User.Password(); !ok {
					out = append(out, u.User.Username())
				}
			}
		}
	} else if ep.Connector != "" {
		c, _ = e.Connector(ep.Connector)
		if c == nil {
			c, _ = e.ConnectorForScheme(ep.Connector)
		}
	}
	for k, v := range ep.Fields {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if c != nil {
			if f, ok := c.Schema.Field(k); ok && f.Secret {
				out = append(out, s)
				continue
			}
		}
		out = append(out, FindSecrets(s)...)
	}
	return out
}
