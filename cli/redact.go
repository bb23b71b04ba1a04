package cli

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/mqb-project/mqb/bridge"
)

// secretList holds the credentials this run of the command has seen in its
// endpoints. Every error line and log record goes through bridge.Redact
// with them.
type secretList struct {
	mu sync.Mutex
	s  []string
}

func (l *secretList) add(s ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range s {
		if x != "" && !slices.Contains(l.s, x) {
			l.s = append(l.s, x)
		}
	}
}

// redact returns text with every known and every recognisable credential
// replaced.
func (l *secretList) redact(text string) string {
	l.mu.Lock()
	s := slices.Clone(l.s)
	l.mu.Unlock()
	return bridge.Redact(text, s...)
}

// rememberSecrets notes the credentials of every endpoint among eps (URL
// passwords and tokens, Secret fields, passwords inside a DSN) so that
// nothing the command prints afterwards shows them.
func (a *app) rememberSecrets(eps ...bridge.Endpoint) {
	for _, ep := range eps {
		a.secrets.add(a.env.Secrets(ep)...)
	}
}

// redactHandler passes every log record through a redaction: the message
// and every string, error or other value of its attributes.
type redactHandler struct {
	inner  slog.Handler
	redact func(string) string
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &redactHandler{inner: h.inner.WithAttrs(red), redact: h.redact}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{inner: h.inner.WithGroup(name), redact: h.redact}
}

func (h *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.redact(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindAny:
		var s string
		if err, ok := v.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(v.Any())
		}
		if r := h.redact(s); r != s {
			return slog.String(a.Key, r)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
