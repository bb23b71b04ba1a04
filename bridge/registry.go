package bridge

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/mqb-project/mqb/core"
)

// BackendFactory opens the filesystem of the spool at path with the
// options of its endpoint (file_mode, dir_mode...). create asks for the spool directory to be made
// when missing (a producer does; a consumer may wait for it). When the
// returned FS implements io.Closer, the connector that opened it closes it
// when it is done.
type BackendFactory func(path string, o BackendOptions, create bool) (core.FS, error)

// Env is a registry of connectors and spool backends plus the shared
// facilities a route's connectors use. Tests build their own with NewEnv;
// the command uses DefaultEnv, which every built-in connector joins from
// its init function.
type Env struct {
	mu         sync.RWMutex
	connectors map[string]*Connector // by YAML name
	schemes    map[string]*Connector // by URL scheme
	backends   map[string]BackendFactory

	memMu sync.Mutex
	mem   map[string]core.FS // memfs spools by path, shared by the whole Env

	// Logger receives the route's and the connectors' logs.
	Logger *slog.Logger
	// Stdin is what the stdin connector reads; nil means os.Stdin as it is
	// when the source connects.
	Stdin io.Reader
	// Stdout is what the stdout connector writes; nil means os.Stdout as it
	// is when the target connects.
	Stdout io.Writer
}

// NewEnv returns a registry with no connectors and the two built-in spool
// backends: os (the real filesystem, the default) and memfs (in-process
// memory: every route of this Env that names the same path shares one
// in-memory spool).
func NewEnv() *Env {
	e := &Env{
		connectors: map[string]*Connector{},
		schemes:    map[string]*Connector{},
		backends:   map[string]BackendFactory{},
		mem:        map[string]core.FS{},
		Logger:     slog.Default(),
	}
	e.backends[BackendOS] = openOS
	e.backends[BackendMemFS] = e.openMem
	return e
}

// DefaultEnv is the registry the built-in connectors and backends add
// themselves to.
var DefaultEnv = NewEnv()

// Register adds a connector. It panics when its name or a scheme is taken,
// since that is a programming error found at start-up.
func (e *Env) Register(c *Connector) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.Schema == nil || c.Schema.Name != c.Name {
		panic(fmt.Sprintf("bridge: connector %q: Schema.Name must equal Name", c.Name))
	}
	if _, dup := e.connectors[c.Name]; dup {
		panic(fmt.Sprintf("bridge: connector %q registered twice", c.Name))
	}
	for _, s := range c.Schemes {
		if _, dup := e.schemes[s]; dup {
			panic(fmt.Sprintf("bridge: scheme %q registered twice", s))
		}
	}
	e.connectors[c.Name] = c
	for _, s := range c.Schemes {
		e.schemes[s] = c
	}
}

// RegisterBackend adds a spool backend under name (used as backend=name).
func (e *Env) RegisterBackend(name string, f BackendFactory) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.backends[name]; dup {
		panic(fmt.Sprintf("bridge: backend %q registered twice", name))
	}
	e.backends[name] = f
}

// Connector returns the connector with the given YAML name.
func (e *Env) Connector(name string) (*Connector, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	c, ok := e.connectors[name]
	return c, ok
}

// ConnectorForScheme returns the connector of a URL scheme.
func (e *Env) ConnectorForScheme(scheme string) (*Connector, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	c, ok := e.schemes[scheme]
	return c, ok
}

// Backend returns the backend factory registered under name.
func (e *Env) Backend(name string) (BackendFactory, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	f, ok := e.backends[name]
	return f, ok
}

// Schemes returns every registered URL scheme, sorted.
func (e *Env) Schemes() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Sorted(maps.Keys(e.schemes))
}

// Names returns every registered connector name, sorted.
func (e *Env) Names() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Sorted(maps.Keys(e.connectors))
}

// Backends returns every registered backend name, sorted.
func (e *Env) Backends() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Sorted(maps.Keys(e.backends))
}
