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
		return Redact(ep.URL)
	}
	if p, ok := ep.Fields["path"].(string); ok {
		return ep.Connector + ":" + p
	}
	return ep.Connector
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
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("no connector named %q (valid: %s, or url)%s", ep.Connector, strings.Join(e.Names(), ", "), e.nameHint(ep.Connector)))}
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
	display := Redact(raw)
	if strings.Contains(raw, "#") {
		// url.Parse would cut the URL there and drop the rest as a
		// fragment: a topic filter's #, a path's or a password's.
		return nil, &ConfigError{Err: fmt.Errorf("%q holds a \"#\", which would end the URL there: write it as %%23", display)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL in its error: do not leak a password.
		return nil, &ConfigError{Err: fmt.Errorf("%q is not a valid URL%s", display, e.urlHint(raw))}
	}
	if u.Scheme == "" {
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("%q has no scheme (valid: %s)", display, strings.Join(e.Schemes(), ", ")))}
	}
	c, ok := e.ConnectorForScheme(strings.ToLower(u.Scheme))
	if !ok {
		return nil, &ConfigError{Err: unknownEndpoint(fmt.Sprintf("unknown scheme %q in %s (valid: %s)%s", u.Scheme, display, strings.Join(e.Schemes(), ", "), e.schemeHint(raw)))}
	}
	if c.TokenUser && u.User != nil {
		if _, ok := u.User.Password(); !ok {
			display = Redact(raw, u.User.Username())
		}
	}
	var m map[string]any
	if c.URLFields != nil {
		m, err = c.URLFields(u)
	} else {
		m, err = option.FromURL(u, option.PathOwn, "")
	}
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

// unknownEndpoint is an error matching ErrUnknownEndpoint with its own text.
type unknownEndpoint string

func (e unknownEndpoint) Error() string        { return string(e) }
func (e unknownEndpoint) Is(target error) bool { return target == ErrUnknownEndpoint }
