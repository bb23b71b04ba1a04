package option

import (
	"fmt"
	"net/url"
	"strings"
)

// PathRule says what the host and path of a connector's URL hold.
type PathRule int

// The path rules of FromURL.
const (
	// PathOwn: the connector reads the host, user and path itself (mqtt,
	// nats, postgres); FromURL decodes only the query.
	PathOwn PathRule = iota
	// PathAbsolute: scheme:///abs/path?option=value. The URL path is the
	// path field; a host part, a relative path or a path query parameter
	// is refused.
	PathAbsolute
	// PathNone: scheme://?option=value. A host or a path is refused.
	PathNone
)

// FromURL returns the fields a URL spells, as the same map YAML would give:
// every query parameter as a field of the same name (a name given twice is
// refused) and, with PathAbsolute, the URL path as the path field. example
// is an absolute path shown in the errors of PathAbsolute, such as
// /var/spool/orders. Every error is an *Error; none quotes a password.
func FromURL(u *url.URL, rule PathRule, example string) (map[string]any, error) {
	switch rule {
	case PathAbsolute:
		if u.Host != "" {
			return nil, &Error{Field: "path", Value: u.Host + u.Path,
				Msg: fmt.Sprintf("must be absolute: write three slashes, as in %s://%s", u.Scheme, example)}
		}
		if u.Opaque != "" || u.Path == "" || u.Path[0] != '/' {
			return nil, &Error{Field: "path", Value: u.Opaque + u.Path,
				Msg: fmt.Sprintf("must be an absolute path, as in %s://%s", u.Scheme, example)}
		}
	case PathNone:
		if u.Host != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
			return nil, &Error{Field: "url", Value: u.Redacted(),
				Msg: fmt.Sprintf("%s takes no host or path: write %s://?option=value", u.Scheme, u.Scheme)}
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, &Error{Field: "url", Msg: "has a malformed query: " + queryErrorText(err)}
	}
	m := make(map[string]any, len(q)+4)
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, &Error{Field: k, Msg: "given more than once"}
		}
		m[k] = vs[0]
	}
	if rule == PathAbsolute {
		if _, ok := m["path"]; ok {
			return nil, &Error{Field: "path", Msg: "comes from the URL path, not a query parameter"}
		}
		m["path"] = u.Path
	}
	return m, nil
}

// queryErrorText describes a query parse error without quoting the query,
// which may hold a password.
func queryErrorText(err error) string {
	if _, ok := err.(url.EscapeError); ok {
		return "a % escape is not followed by two hex digits (write %25 for a literal %)"
	}
	if strings.Contains(err.Error(), "semicolon") {
		return "a ; must be written %3B (parameters are separated by &)"
	}
	return "it cannot be decoded"
}
