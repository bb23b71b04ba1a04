package bridge

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/mqb-project/mqb/core/option"
)

// Endpoint names one side of a route, either by URL or by connector name and
// fields. The two spellings are equivalent:
//
//	Endpoint{URL: "dir-spool:///var/spool/orders?fsync=batch"}
//	Endpoint{Connector: "dir_spool", Fields: map[string]any{"path": "/var/spool/orders", "fsync": "batch"}}
type Endpoint struct {
	// URL is the endpoint as a URL; when set, Connector and Fields are
	// ignored.
	URL string
	// Connector is the YAML name of the connector, e.g. dir_spool (a URL
	// scheme such as dir-spool is accepted too).
	Connector string
	// Fields are the connector's options, as YAML gives them.
	Fields map[string]any
	// Line is the YAML line the endpoint was read from, 0 otherwise; it
	// makes configuration errors point at the right place.
	Line int
	// Origin, when set, is how errors about the endpoint start instead of
	// "input" or "output" (a command line flag such as --from).
	Origin string
}

// String returns the endpoint as it may be printed: a URL with its password
// replaced, or the connector name with its path.
func (ep Endpoint) String() string {
	if ep.URL != "" {
		return RedactString(ep.URL)
	}
	if p, ok := ep.Fields["path"].(string); ok {
		return ep.Connector + ":" + p
	}
	return ep.Connector
}

// RedactString returns raw with the password of a URL replaced by "xxxxx";
// text that is not a URL with a password comes back unchanged.
func RedactString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	return RedactURL(u)
}

// Resolved is an endpoint matched to its connector, with its options decoded
// and validated.
type Resolved struct {
	Connector *Connector
	Values    *option.Values
	// Display is how the endpoint is shown in logs and errors (no
	// password).
	Display string
}

// Resolve finds the connector of ep and decodes its options through the
// connector's table. Every failure is a *ConfigError: an unknown scheme or
// connector names the registered ones, an unknown or mistyped option names
// the valid ones.
func (e *Env) Resolve(ep Endpoint) (*Resolved, error) {
	if ep.URL != "" {
		return e.resolveURL(ep.URL)
	}
	c, ok := e.Connector(ep.Connector)
	if !ok {
		c, ok = e.ConnectorForScheme(ep.Connector)
	}
	if !ok {
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("no connector named %q (valid: %s, or url)", ep.Connector, strings.Join(e.Names(), ", ")))}
	}
	fields := ep.Fields
	if fields == nil {
		fields = map[string]any{}
	}
	v, err := c.Schema.DecodeMap(fields)
	if err != nil {
		return nil, &ConfigError{Where: c.Name, Err: err}
	}
	return &Resolved{Connector: c, Values: v, Display: ep.String()}, nil
}

func (e *Env) resolveURL(raw string) (*Resolved, error) {
	display := RedactString(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL in its error: do not leak a password.
		return nil, &ConfigError{Err: fmt.Errorf("%q is not a valid URL", display)}
	}
	if u.Scheme == "" {
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("%q has no scheme (valid: %s)", display, strings.Join(e.Schemes(), ", ")))}
	}
	c, ok := e.ConnectorForScheme(strings.ToLower(u.Scheme))
	if !ok {
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("unknown scheme %q in %s (valid: %s)", u.Scheme, display, strings.Join(e.Schemes(), ", ")))}
	}
	if c.Redact != nil {
		display = c.Redact(u)
	} else {
		display = RedactURL(u)
	}
	urlFields := c.URLFields
	if urlFields == nil {
		urlFields = QueryFields
	}
	m, err := urlFields(u)
	if err != nil {
		return nil, &ConfigError{Where: display, Err: err}
	}
	v, err := c.Schema.DecodeMap(m)
	if err != nil {
		return nil, &ConfigError{Where: display, Err: err}
	}
	return &Resolved{Connector: c, Values: v, Display: display}, nil
}

// NewSource resolves ep and builds its source, without connecting it.
func (e *Env) NewSource(ep Endpoint) (Source, *Resolved, error) {
	r, err := e.Resolve(ep)
	if err != nil {
		return nil, nil, err
	}
	if r.Connector.NewSource == nil {
		return nil, nil, &ConfigError{Where: r.Display, Err: fmt.Errorf("%s cannot be a source (sources: %s)", r.Connector.Name, strings.Join(e.namesWith(AsSource), ", "))}
	}
	s, err := r.Connector.NewSource(e, r.Values)
	if err != nil {
		return nil, nil, configErr(r.Display, err)
	}
	return s, r, nil
}

// NewTarget resolves ep and builds its target, without connecting it.
func (e *Env) NewTarget(ep Endpoint) (Target, *Resolved, error) {
	r, err := e.Resolve(ep)
	if err != nil {
		return nil, nil, err
	}
	if r.Connector.NewTarget == nil {
		return nil, nil, &ConfigError{Where: r.Display, Err: fmt.Errorf("%s cannot be a target (targets: %s)", r.Connector.Name, strings.Join(e.namesWith(AsTarget), ", "))}
	}
	t, err := r.Connector.NewTarget(e, r.Values)
	if err != nil {
		return nil, nil, configErr(r.Display, err)
	}
	return t, r, nil
}

func (e *Env) namesWith(k Kind) []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []string
	for n, c := range e.connectors {
		if (k == AsSource && c.NewSource != nil) || (k == AsTarget && c.NewTarget != nil) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// PathFields is a URLFields for connectors whose URL names an absolute path
// (scheme:///abs/path?option=value): the URL path becomes the path field and
// every query parameter a field of the same name. A host part, a relative
// path or a path query parameter is refused with a *option.Error.
func PathFields(u *url.URL) (map[string]any, error) {
	if u.Host != "" {
		return nil, &option.Error{Field: "path", Value: u.Host + u.Path,
			Msg: fmt.Sprintf("must be absolute: write three slashes, as in %s:///data/file", u.Scheme)}
	}
	if u.Opaque != "" || u.Path == "" || u.Path[0] != '/' {
		return nil, &option.Error{Field: "path", Value: u.Opaque + u.Path,
			Msg: fmt.Sprintf("must be an absolute path, as in %s:///data/file", u.Scheme)}
	}
	m, err := QueryFields(u)
	if err != nil {
		return nil, err
	}
	if _, ok := m["path"]; ok {
		return nil, &option.Error{Field: "path", Msg: "comes from the URL path, not a query parameter"}
	}
	m["path"] = u.Path
	return m, nil
}

// NoPathFields is a URLFields for connectors whose URL has no path
// (stdin://?format=csv): every query parameter becomes a field, and a host
// or path is refused.
func NoPathFields(u *url.URL) (map[string]any, error) {
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.Opaque != "" {
		return nil, &option.Error{Field: "url", Value: u.Redacted(),
			Msg: fmt.Sprintf("%s takes no host or path: write %s://?option=value", u.Scheme, u.Scheme)}
	}
	return QueryFields(u)
}

// unknownEndpoint is an error matching ErrUnknownEndpoint with its own text.
type unknownEndpoint string

func (e unknownEndpoint) Error() string        { return string(e) }
func (e unknownEndpoint) Is(target error) bool { return target == ErrUnknownEndpoint }
