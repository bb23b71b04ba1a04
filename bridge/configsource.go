package bridge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ParseOptions changes how a route file is read.
type ParseOptions struct {
	// Sets are overrides, each "path.to.key=value" as on the command line
	// (--set batch.size=10, --set output.dir_spool.fsync=batch), applied
	// in order after environment variables are substituted. The value is
	// read as YAML, so numbers and booleans keep their type.
	Sets []string
	// LookupEnv resolves ${VAR}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// ParseConfigWith is ParseConfig with environment variables substituted
// and overrides applied. ${VAR} is the value of VAR and ${VAR:-default} the
// default when VAR is unset or empty; $${ is a literal ${. Every variable
// that is unset and has no default is named in one error, with its line.
func ParseConfigWith(r io.Reader, o ParseOptions) (*Config, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("read the configuration: %w", err)}
	}
	lookup := o.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if src, err = expandEnv(src, lookup); err != nil {
		return nil, &ConfigError{Err: err}
	}
	if len(o.Sets) > 0 {
		if src, err = applySets(src, o.Sets); err != nil {
			return nil, err
		}
	}
	return parseConfig(src)
}

// ParseConfigFileWith is ParseConfigWith on a file; errors start with its
// name.
func ParseConfigFileWith(path string, o ParseOptions) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("read route file: %w", err)}
	}
	c, err := ParseConfigWith(bytes.NewReader(b), o)
	if err != nil {
		return nil, configErr(path, err)
	}
	return c, nil
}

var envRE = regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandEnv substitutes ${VAR} and ${VAR:-default} in src.
func expandEnv(src []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var missing, bad []string
	lines := bytes.Split(src, []byte("\n"))
	for i, l := range lines {
		lines[i] = envRE.ReplaceAllFunc(l, func(m []byte) []byte {
			if string(m) == "$${" {
				return []byte("${")
			}
			expr := string(m[2 : len(m)-1])
			name, def, hasDef := strings.Cut(expr, ":-")
			if !envNameRE.MatchString(name) {
				bad = append(bad, fmt.Sprintf("line %d: %q", i+1, "${"+expr+"}"))
				return m
			}
			if v, ok := lookup(name); ok && (v != "" || !hasDef) {
				return []byte(v)
			}
			if hasDef {
				return []byte(def)
			}
			missing = append(missing, fmt.Sprintf("%s (line %d)", name, i+1))
			return m
		})
	}
	switch {
	case len(bad) > 0:
		return nil, fmt.Errorf("%s: not a variable reference; write ${NAME} or ${NAME:-default}, or $${ for a literal ${", strings.Join(bad, ", "))
	case len(missing) > 0:
		return nil, fmt.Errorf("environment variable(s) not set and without a default: %s; set them, or give a default as in ${NAME:-value}", strings.Join(missing, ", "))
	}
	return bytes.Join(lines, []byte("\n")), nil
}

// applySets applies --set overrides to the YAML in src and returns the
// result as YAML.
func applySets(src []byte, sets []string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, parseErr(src, err) // the file's own error, with its lines
	}
	if doc.Kind == 0 { // an empty file: the overrides make the whole route
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &ConfigError{Err: errors.New("a route file holds a mapping (input:, output:...)")}
	}
	for _, s := range sets {
		if err := setPath(root, s); err != nil {
			return nil, &ConfigError{Where: "--set " + s, Err: err}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("apply --set: %w", err)}
	}
	return out, nil
}

func parseErr(src []byte, err error) error {
	if hint := yamlSyntaxHint(src, err); hint != nil {
		return &ConfigError{Err: hint}
	}
	return &ConfigError{Err: yamlError(err)}
}

// setPath sets the key path of s ("a.b.c=value") in the mapping m,
// making the mappings on the way.
func setPath(m *yaml.Node, s string) error {
	path, value, ok := strings.Cut(s, "=")
	if !ok || path == "" {
		return errors.New("expected PATH=VALUE, as in batch.size=10 or output.dir_spool.fsync=batch")
	}
	var val yaml.Node
	if err := yaml.Unmarshal([]byte(value), &val); err != nil || len(val.Content) != 1 || val.Content[0].Kind != yaml.ScalarNode {
		val = yaml.Node{Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: value, Tag: "!!str"}}}
	}
	keys := strings.Split(path, ".")
	if err := replaceEndpoint(m, keys); err != nil {
		return err
	}
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("empty key in %q", path)
		}
		child := lookupKey(m, k)
		if i == len(keys)-1 {
			if child == nil {
				m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, val.Content[0])
			} else {
				*child = *val.Content[0]
			}
			return nil
		}
		if child == nil {
			child = &yaml.Node{Kind: yaml.MappingNode}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, child)
		}
		if child.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping (it holds %q)", strings.Join(keys[:i+1], "."), child.Value)
		}
		m = child
	}
	return nil
}

// replaceEndpoint empties the endpoint that keys (input.url, output.stdout)
// names when it holds another key, since an endpoint holds exactly one; an
// option of another connector than the endpoint's is an error.
func replaceEndpoint(m *yaml.Node, keys []string) error {
	if len(keys) < 2 || keys[0] != "input" && keys[0] != "output" {
		return nil
	}
	ep := lookupKey(m, keys[0])
	if ep == nil || ep.Kind != yaml.MappingNode || len(ep.Content) != 2 || ep.Content[0].Value == keys[1] {
		return nil
	}
	if len(keys) > 2 {
		return fmt.Errorf("%s is a %s endpoint, not %s: --set %s.%s.OPTION=VALUE changes its options, --set %s.url=URL replaces it", keys[0], ep.Content[0].Value, keys[1], keys[0], ep.Content[0].Value, keys[0])
	}
	ep.Content = nil
	return nil
}

func lookupKey(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
