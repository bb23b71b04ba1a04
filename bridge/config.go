package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mqb-project/mqb/core/option"
)

// Config is a route as users write it in YAML:
//
//	input:
//	  file: {path: /data/orders.jsonl, format: json}
//	output:
//	  url: "dir-spool:///var/spool/orders?emit_done=success"
//	batch: {size: 100, period: 200ms}
//	drain: true
//
// Each endpoint holds exactly one key: url, or the name of a connector whose
// value holds that connector's options (the same names as in its URL
// query). Unknown keys anywhere are errors.
type Config struct {
	Input  Endpoint    `yaml:"input"`
	Output Endpoint    `yaml:"output"`
	Batch  BatchConfig `yaml:"batch"`
	// Drain ends the route once the input has nothing left (see
	// Route.Drain).
	Drain bool        `yaml:"drain"`
	Retry RetryConfig `yaml:"retry"`
	// ShutdownTimeout bounds how long in-flight messages may take to
	// settle after an interrupt (default 30s).
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// DeadLetter is where messages the output refuses go, with the error
	// in their metadata (see Route.DeadLetter): a URL, or an endpoint
	// mapping like input and output. Unset: a refusal stops the route.
	DeadLetter *Endpoint `yaml:"dead_letter"`
	// MaxDeliveries is how many times a refused message is tried before it
	// is dead-lettered (default 1).
	MaxDeliveries int `yaml:"max_deliveries"`
	// Pipeline holds the processors between input and output.
	Pipeline PipelineConfig `yaml:"pipeline"`
}

// BatchConfig is the batching of a route: up to Size messages (default 100),
// waiting at most Period after the first one for more (default 0: write what
// one read returned), written in parts of at most MaxBytes of payload when
// the output or a processor needs payloads in memory (default 32MiB; see
// Route.BatchMaxBytes).
type BatchConfig struct {
	Size     int      `yaml:"size"`
	Period   Duration `yaml:"period"`
	MaxBytes ByteSize `yaml:"max_bytes"`
}

// RetryConfig is the retry policy of a route; unset fields take the values
// of DefaultRetry. MaxRetries 0 means no retries, -1 retries forever.
// Budget is how long failures to connect (and failures an endpoint
// retries by itself, see RetryUser) are retried; 0s means not at all.
type RetryConfig struct {
	InitialInterval Duration  `yaml:"initial_interval"`
	MaxInterval     Duration  `yaml:"max_interval"`
	MaxRetries      *int      `yaml:"max_retries"`
	Budget          *Duration `yaml:"budget"`
}

// Duration is a time.Duration written as in Go ("250ms", "2s", "1m30s").
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("line %d: expected a duration such as 250ms or 2s", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 250ms or 2s", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as Go prints it.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// ByteSize is a byte count in a route file: a whole number, or one with a
// unit such as 512KiB or 10MB (see option.ParseSize).
type ByteSize int64

// UnmarshalYAML reads a byte count.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if n.Kind != yaml.ScalarNode || n.Decode(&s) != nil {
		return fmt.Errorf("line %d: expected a size such as 1048576, 512KiB or 10MB", n.Line)
	}
	v, err := option.ParseSize(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = ByteSize(v)
	return nil
}

// MarshalYAML writes the byte count as a number.
func (b ByteSize) MarshalYAML() (any, error) { return int64(b), nil }

// UnmarshalYAML reads an endpoint: a URL string, or a mapping with exactly
// one key, url or a connector name.
func (ep *Endpoint) UnmarshalYAML(n *yaml.Node) error {
	*ep = Endpoint{Line: n.Line}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value != "" {
		ep.URL = n.Value
		return nil
	}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return fmt.Errorf("line %d: an endpoint must hold exactly one key: url, or a connector name such as dir_spool", n.Line)
	}
	key, val := n.Content[0], n.Content[1]
	if key.Value == "url" {
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" || val.Value == "" {
			return fmt.Errorf("line %d: url must be a URL string, such as \"dir-spool:///var/spool/orders\"", val.Line)
		}
		ep.URL = val.Value
		return nil
	}
	ep.Connector = key.Value
	ep.Fields = map[string]any{}
	switch {
	case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
		return nil
	case val.Kind != yaml.MappingNode:
		return fmt.Errorf("line %d: %s must hold a mapping of options, such as {path: /var/spool/orders}", val.Line, key.Value)
	}
	for i := 0; i+1 < len(val.Content); i += 2 {
		k, v := val.Content[i], val.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: option %q must be a single value", v.Line, key.Value, k.Value)
		}
		if _, dup := ep.Fields[k.Value]; dup {
			return fmt.Errorf("line %d: %s: option %q given more than once", k.Line, key.Value, k.Value)
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return fmt.Errorf("line %d: %s: option %q: %w", v.Line, key.Value, k.Value, err)
		}
		ep.Fields[k.Value] = x
	}
	return nil
}

// ParseConfig reads a route from YAML, strictly: an unknown key, a value of
// the wrong type or a second document is an error. The connectors and
// their options are checked by Env.NewRoute, not here. Errors are
// *ConfigError values with the YAML line. Environment variables are
// substituted as ParseConfigWith says.
func ParseConfig(r io.Reader) (*Config, error) { return ParseConfigWith(r, ParseOptions{}) }

func parseConfig(src []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ConfigError{Err: errors.New("the configuration is empty: it needs input: and output:")}
		}
		return nil, parseErr(src, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &ConfigError{Err: errors.New("more than one YAML document: a route file holds one")}
	}
	if c.Input.URL == "" && c.Input.Connector == "" {
		return nil, &ConfigError{Err: errors.New("input: is missing (for example input: {url: \"dir-spool:///var/spool/orders\"})")}
	}
	if c.Output.URL == "" && c.Output.Connector == "" {
		return nil, &ConfigError{Err: errors.New("output: is missing (for example output: {url: \"file:///data/out.jsonl?format=json\"})")}
	}
	if c.Batch.Size < 0 {
		return nil, &ConfigError{Err: fmt.Errorf("batch: size must be 1 or more (got %d)", c.Batch.Size)}
	}
	if c.Batch.MaxBytes < 0 {
		return nil, &ConfigError{Err: fmt.Errorf("batch: max_bytes must be 1 or more (got %d)", c.Batch.MaxBytes)}
	}
	if c.MaxDeliveries < 0 {
		return nil, &ConfigError{Err: fmt.Errorf("max_deliveries must be 1 or more (got %d)", c.MaxDeliveries)}
	}
	if c.Retry.MaxRetries != nil && *c.Retry.MaxRetries < -1 {
		return nil, &ConfigError{Err: fmt.Errorf("retry: max_retries must be -1 (forever), 0 (never) or more (got %d)", *c.Retry.MaxRetries)}
	}
	return &c, nil
}

var (
	unknownField = regexp.MustCompile(`field (\S+) not found in type (\S+)`)
	configTypes  = map[string]reflect.Type{}
)

func init() {
	for _, v := range []any{Config{}, BatchConfig{}, RetryConfig{}, PipelineConfig{}} {
		t := reflect.TypeOf(v)
		configTypes[t.String()] = t
	}
}

// yamlError turns a yaml.v3 error into one line that names what is valid.
func yamlError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = unknownField.ReplaceAllStringFunc(m, func(s string) string {
				g := unknownField.FindStringSubmatch(s)
				keys := yamlKeys(configTypes[g[2]])
				msg := fmt.Sprintf("unknown key %q (valid: %s)", g[1], strings.Join(keys, ", "))
				if c := option.Closest(g[1], keys); c != "" {
					msg += fmt.Sprintf("; did you mean %q?", c)
				}
				return msg
			})
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}

func yamlKeys(t reflect.Type) []string {
	if t == nil {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// NewRoute builds the route c describes, with its source and target made
// but not connected: a route that NewRoute accepts has a valid
// configuration. Errors are *ConfigError values.
func (e *Env) NewRoute(c *Config) (*Route, error) {
	src, rin, err := e.NewSource(c.Input)
	if err != nil {
		return nil, configErr(where("input", c.Input), err)
	}
	tgt, rout, err := e.NewTarget(c.Output)
	if err != nil {
		return nil, configErr(where("output", c.Output), err)
	}
	retry := DefaultRetry
	if c.Retry.InitialInterval > 0 {
		retry.Initial = time.Duration(c.Retry.InitialInterval)
	}
	if c.Retry.MaxInterval > 0 {
		retry.Max = time.Duration(c.Retry.MaxInterval)
	}
	if c.Retry.MaxRetries != nil {
		retry.MaxRetries = *c.Retry.MaxRetries
	}
	if c.Retry.Budget != nil {
		retry.Budget = time.Duration(*c.Retry.Budget)
	}
	if retry.Max < retry.Initial {
		return nil, &ConfigError{Where: "retry", Err: fmt.Errorf("max_interval %v is less than initial_interval %v", retry.Max, retry.Initial)}
	}
	var dead Target
	var deadOut string
	if c.DeadLetter != nil {
		var rdl *Resolved
		dead, rdl, err = e.NewTarget(*c.DeadLetter)
		if err != nil {
			return nil, configErr(where("dead_letter", *c.DeadLetter), err)
		}
		deadOut = rdl.Display
	}
	if err := checkPlaces(src, tgt, dead); err != nil {
		return nil, err
	}
	if err := checkTopics(src, tgt, dead); err != nil {
		return nil, err
	}
	if err := checkSessions(src, tgt, dead); err != nil {
		return nil, err
	}
	pipe, err := c.Pipeline.pipeline()
	if err != nil {
		return nil, err
	}
	return &Route{
		Pipeline:         pipe,
		DeadLetter:       dead,
		DeadLetterOutput: deadOut,
		MaxDeliveries:    c.MaxDeliveries,
		Source:           src,
		Target:           tgt,
		Input:            rin.Display,
		Output:           rout.Display,
		BatchSize:        c.Batch.Size,
		BatchPeriod:      time.Duration(c.Batch.Period),
		BatchMaxBytes:    int64(c.Batch.MaxBytes),
		Drain:            c.Drain,
		Retry:            &retry,
		ShutdownTimeout:  time.Duration(c.ShutdownTimeout),
		Logger:           e.Logger,
	}, nil
}

func where(side string, ep Endpoint) string {
	switch {
	case ep.Origin != "":
		return ep.Origin
	case ep.Line > 0:
		return fmt.Sprintf("line %d: %s", ep.Line, side)
	}
	return side
}

// FromConfig reads a route from YAML and builds it with the connectors of
// e. See Config for the format.
func (e *Env) FromConfig(r io.Reader) (*Route, error) {
	c, err := ParseConfig(r)
	if err != nil {
		return nil, err
	}
	return e.NewRoute(c)
}

// FromConfigFile is FromConfig on a file; errors start with its name.
func (e *Env) FromConfigFile(path string) (*Route, error) {
	c, err := ParseConfigFile(path)
	if err != nil {
		return nil, err
	}
	r, err := e.NewRoute(c)
	if err != nil {
		return nil, configErr(path, err)
	}
	return r, nil
}

// ParseConfigFile is ParseConfig on a file; errors start with its name.
func ParseConfigFile(path string) (*Config, error) {
	return ParseConfigFileWith(path, ParseOptions{})
}

// FromConfig reads a route from YAML with the connectors of DefaultEnv.
func FromConfig(r io.Reader) (*Route, error) { return DefaultEnv.FromConfig(r) }

// FromConfigFile reads a route from a YAML file with the connectors of
// DefaultEnv.
func FromConfigFile(path string) (*Route, error) { return DefaultEnv.FromConfigFile(path) }
