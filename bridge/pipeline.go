package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/itchyny/gojq"
	"go.yaml.in/yaml/v3"
)

// Processor reshapes one message between the input and the output. It
// returns the messages that take its place: none drops it (it is then
// acknowledged at the source like a written one), one maps it, several
// split it.
type Processor interface {
	Process(m *Message) ([]*Message, error)
}

// What a route does when a processor fails on a message.
const (
	// OnErrorStop ends the route with an error naming the message; its
	// batch is negatively acknowledged, so nothing is lost.
	OnErrorStop = "stop"
	// OnErrorNack negatively acknowledges the batch, which the source
	// delivers again (a JetStream consumer's max_deliver then decides its
	// fate), and goes on after the retry policy's wait.
	OnErrorNack = "nack"
)

// Pipeline is the processors of a route, applied in order to every message.
type Pipeline struct {
	Processors []Processor
	// OnError is OnErrorStop (the default when empty) or OnErrorNack.
	OnError string
}

// ProcessError is the error of a processor on one message.
type ProcessError struct {
	Processor string // e.g. jq '.items[]'
	MessageID string
	Err       error
}

func (e *ProcessError) Error() string {
	return fmt.Sprintf("processor %s on message %s: %v", e.Processor, e.MessageID, e.Err)
}

func (e *ProcessError) Unwrap() error { return e.Err }

// apply runs every message of batch through the pipeline. A message a
// processor fails on is given to refused when it is not nil (a route with
// a dead-letter endpoint), and the others go on; without it the error ends
// the batch.
func (p *Pipeline) apply(batch []*Message, refused func(*Message, error) error) ([]*Message, error) {
	var out []*Message
	for _, m := range batch {
		msgs, err := p.chain(m)
		if err != nil {
			if refused == nil {
				return nil, err
			}
			if rerr := refused(m, err); rerr != nil {
				return nil, rerr
			}
			continue
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// chain runs one message through every processor in turn.
func (p *Pipeline) chain(m *Message) ([]*Message, error) {
	cur := []*Message{m}
	for _, proc := range p.Processors {
		var next []*Message
		for _, c := range cur {
			res, err := proc.Process(c)
			if err != nil {
				return nil, &ProcessError{Processor: describeProcessor(proc), MessageID: m.ID, Err: err}
			}
			for i, o := range res {
				if len(res) > 1 && o.ID == c.ID && c.ID != "" {
					o.ID = fmt.Sprintf("%s-%d", c.ID, i) // split parts stay distinct for deduplicating targets
				}
			}
			next = append(next, res...)
		}
		cur = next
	}
	return cur, nil
}

func describeProcessor(p Processor) string {
	if s, ok := p.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", p)
}

// JQ is a processor that runs a jq program (gojq) on each JSON payload: each
// value the program yields becomes a message with that value as its JSON
// payload and the input's metadata; no value drops the message. $meta is
// the message's metadata as an object.
type JQ struct {
	src  string
	code *gojq.Code
}

// NewJQ compiles a jq program.
func NewJQ(program string) (*JQ, error) {
	q, err := gojq.Parse(program)
	if err != nil {
		return nil, fmt.Errorf("jq program %q: %w", program, err)
	}
	code, err := gojq.Compile(q, gojq.WithVariables([]string{"$meta"}))
	if err != nil {
		return nil, fmt.Errorf("jq program %q: %w", program, err)
	}
	return &JQ{src: program, code: code}, nil
}

func (j *JQ) String() string { return fmt.Sprintf("jq %q", j.src) }

// ForgetsPayloads says that JQ keeps nothing of a payload: it decodes it
// into values of their own and encodes the results anew
// (PayloadForgetter).
func (j *JQ) ForgetsPayloads() bool { return true }

// Process implements Processor.
func (j *JQ) Process(m *Message) ([]*Message, error) {
	vals, err := j.run(m)
	if err != nil {
		return nil, err
	}
	out := make([]*Message, 0, len(vals))
	for _, v := range vals {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode the result as JSON: %w", err)
		}
		out = append(out, &Message{ID: m.ID, Metadata: copyMeta(m.Metadata), Payload: b})
	}
	return out, nil
}

func (j *JQ) run(m *Message) ([]any, error) {
	var in any
	if err := json.Unmarshal(m.Payload, &in); err != nil {
		return nil, fmt.Errorf("the payload is not JSON: %w", err)
	}
	meta := make(map[string]any, len(m.Metadata))
	for k, v := range m.Metadata {
		meta[k] = v
	}
	var vals []any
	iter := j.code.Run(in, meta)
	for {
		v, ok := iter.Next()
		if !ok {
			return vals, nil
		}
		if err, isErr := v.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return vals, nil
			}
			return nil, err
		}
		vals = append(vals, v)
	}
}

// Filter keeps the messages for which a jq condition yields true and drops
// the others.
type Filter struct{ jq *JQ }

// NewFilter compiles the condition of a filter.
func NewFilter(condition string) (*Filter, error) {
	j, err := NewJQ(condition)
	if err != nil {
		return nil, err
	}
	return &Filter{jq: j}, nil
}

func (f *Filter) String() string { return fmt.Sprintf("filter %q", f.jq.src) }

// ForgetsPayloads says that Filter keeps no payload (PayloadForgetter).
func (f *Filter) ForgetsPayloads() bool { return true }

// Process implements Processor.
func (f *Filter) Process(m *Message) ([]*Message, error) {
	vals, err := f.jq.run(m)
	if err != nil {
		return nil, err
	}
	if len(vals) > 0 && vals[0] != nil && vals[0] != false {
		return []*Message{m}, nil
	}
	return nil, nil
}

// Metadata sets and removes metadata keys.
type Metadata struct {
	Set    map[string]string `yaml:"set"`
	Remove []string          `yaml:"remove"`
}

func (md *Metadata) String() string { return "metadata" }

// ForgetsPayloads says that Metadata keeps no payload (PayloadForgetter).
func (md *Metadata) ForgetsPayloads() bool { return true }

// Process implements Processor.
func (md *Metadata) Process(m *Message) ([]*Message, error) {
	meta := copyMeta(m.Metadata)
	for _, k := range md.Remove {
		delete(meta, k)
	}
	for k, v := range md.Set {
		meta[k] = v
	}
	return []*Message{{ID: m.ID, Metadata: meta, Payload: m.Payload}}, nil
}

func copyMeta(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// PipelineConfig is the pipeline: section of a route file:
//
//	pipeline:
//	  on_error: stop          # or nack
//	  processors:
//	    - jq: '.items[]'
//	    - filter: '.amount > 100'
//	    - metadata: {set: {team: sales}, remove: [line]}
type PipelineConfig struct {
	OnError    string            `yaml:"on_error"`
	Processors []ProcessorConfig `yaml:"processors"`
}

// ProcessorConfig is one processor of a route file: a mapping with one key,
// jq, filter or metadata.
type ProcessorConfig struct {
	Processor Processor
	Line      int
}

// ProcessorKinds are the keys of a processor in a route file.
var ProcessorKinds = []string{"filter", "jq", "metadata"}

// UnmarshalYAML reads one processor.
func (pc *ProcessorConfig) UnmarshalYAML(n *yaml.Node) error {
	*pc = ProcessorConfig{Line: n.Line}
	if n.Kind != yaml.MappingNode || len(n.Content) != 2 {
		return fmt.Errorf("line %d: a processor is a mapping with one key: %s", n.Line, strings.Join(ProcessorKinds, ", "))
	}
	key, val := n.Content[0], n.Content[1]
	var err error
	switch key.Value {
	case "jq", "filter":
		if val.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s takes a jq program as a string", val.Line, key.Value)
		}
		if key.Value == "jq" {
			pc.Processor, err = NewJQ(val.Value)
		} else {
			pc.Processor, err = NewFilter(val.Value)
		}
	case "metadata":
		md := &Metadata{}
		dec := val.Decode(md)
		if dec != nil || len(md.Set)+len(md.Remove) == 0 {
			return fmt.Errorf("line %d: metadata takes {set: {key: value}, remove: [key]}", val.Line)
		}
		pc.Processor = md
	default:
		return fmt.Errorf("line %d: unknown processor %q (valid: %s)", key.Line, key.Value, strings.Join(ProcessorKinds, ", "))
	}
	if err != nil {
		return fmt.Errorf("line %d: %w", val.Line, err)
	}
	return nil
}

// pipeline builds the route's pipeline from its configuration; nil when it
// has no processors.
func (pc PipelineConfig) pipeline() (*Pipeline, error) {
	switch pc.OnError {
	case "", OnErrorStop, OnErrorNack:
	default:
		return nil, &ConfigError{Where: "pipeline", Err: fmt.Errorf("on_error %q: valid values are %s, %s", pc.OnError, OnErrorStop, OnErrorNack)}
	}
	if len(pc.Processors) == 0 {
		return nil, nil
	}
	p := &Pipeline{OnError: pc.OnError}
	for _, c := range pc.Processors {
		p.Processors = append(p.Processors, c.Processor)
	}
	return p, nil
}
