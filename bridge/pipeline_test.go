package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/stdio"
)

func mustJQ(t *testing.T, prog string) *bridge.JQ {
	t.Helper()
	j, err := bridge.NewJQ(prog)
	require.NoError(t, err)
	return j
}

func TestPipelineMapsDropsAndSplits(t *testing.T) {
	src, tgt := newFakeSource(6), &fakeTarget{}
	r := newRoute(src, tgt)
	r.BatchSize = 3
	filter, err := bridge.NewFilter(". % 2 == 0") // keeps 0, 2, 4
	require.NoError(t, err)
	r.Pipeline = &bridge.Pipeline{Processors: []bridge.Processor{
		filter,
		mustJQ(t, `if . == 2 then empty else {n: ., twice: (. * 2)}, {n: ., meta: $meta.k} end`),
		&bridge.Metadata{Set: map[string]string{"team": "sales"}, Remove: []string{"k"}},
	}}
	for _, m := range src.queue {
		m.Metadata = map[string]string{"k": "v" + string(m.Payload)}
	}
	obs := &countingObserver{}
	r.Observer = obs
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, []string{`{"n":0,"twice":0}`, `{"meta":"v0","n":0}`, `{"n":4,"twice":8}`, `{"meta":"v4","n":4}`}, payloads(tgt.got))
	for _, m := range tgt.got {
		assert.Equal(t, map[string]string{"team": "sales"}, m.Metadata)
	}
	assert.NotEqual(t, tgt.got[0].ID, tgt.got[1].ID, "the parts of a split message have their own ids")
	assert.True(t, strings.HasPrefix(tgt.got[0].ID, strings.TrimSuffix(tgt.got[1].ID, "-1")))
	assert.Equal(t, 0, src.inflight)
	assert.Equal(t, []string{"write 2", "ack 3", "write 2", "ack 3"}, src.events, "dropped messages are acknowledged with their batch")
	assert.Equal(t, 6, obs.acked)
}

func TestPipelineAllDroppedIsAcked(t *testing.T) {
	src, tgt := newFakeSource(4), &fakeTarget{}
	r := newRoute(src, tgt)
	r.BatchSize = 2
	r.Pipeline = &bridge.Pipeline{Processors: []bridge.Processor{mustJQ(t, "empty")}}
	require.NoError(t, r.Run(context.Background()))
	assert.Empty(t, tgt.got)
	assert.Equal(t, []string{"ack 2", "ack 2"}, src.events)
	assert.Equal(t, 0, tgt.calls)
}

func TestPipelineErrors(t *testing.T) {
	t.Run("stop names the message and nacks its batch", func(t *testing.T) {
		src, tgt := newFakeSource(3), &fakeTarget{}
		src.queue[1].Payload = []byte("not json")
		src.queue[1].ID = "msg-1"
		r := newRoute(src, tgt)
		r.Pipeline = &bridge.Pipeline{Processors: []bridge.Processor{mustJQ(t, ".")}}
		err := r.Run(context.Background())
		var pe *bridge.ProcessError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "msg-1", pe.MessageID)
		assert.Contains(t, err.Error(), `processor jq "." on message msg-1: the payload is not JSON`)
		assert.Equal(t, []string{"nack 3"}, src.events)
		assert.Len(t, src.queue, 3, "nothing is lost")
	})
	t.Run("nack sends the batch back and goes on", func(t *testing.T) {
		src, tgt := newFakeSource(2), &fakeTarget{}
		r := newRoute(src, tgt)
		calls := 0
		r.Pipeline = &bridge.Pipeline{OnError: bridge.OnErrorNack, Processors: []bridge.Processor{procFunc(func(m *bridge.Message) ([]*bridge.Message, error) {
			calls++
			if calls == 1 {
				return nil, assert.AnError
			}
			return []*bridge.Message{m}, nil
		})}}
		require.NoError(t, r.Run(context.Background()))
		assert.Equal(t, []string{"0", "1"}, payloads(tgt.got))
		assert.Equal(t, []string{"nack 2", "write 2", "ack 2"}, src.events)
	})
}

type procFunc func(m *bridge.Message) ([]*bridge.Message, error)

func (f procFunc) Process(m *bridge.Message) ([]*bridge.Message, error) { return f(m) }

func TestPipelineConfig(t *testing.T) {
	tests := []struct{ name, yaml, wantErr string }{
		{"ok", "pipeline:\n  on_error: nack\n  processors:\n    - jq: '.items[]'\n    - filter: '.qty > 0'\n    - metadata: {set: {a: b}, remove: [line]}\n", ""},
		{"bad jq", "pipeline:\n  processors:\n    - jq: '.a['\n", `line 3: jq program ".a[": unexpected EOF`},
		{"unknown processor", "pipeline:\n  processors:\n    - mapping: 'root = this'\n", `line 3: unknown processor "mapping" (valid: filter, jq, metadata)`},
		{"bad on_error", "pipeline:\n  on_error: retry\n  processors:\n    - jq: .\n", `pipeline: on_error "retry": valid values are stop, nack`},
		{"empty metadata", "pipeline:\n  processors:\n    - metadata: {sett: {a: b}}\n", "line 3: metadata takes {set: {key: value}, remove: [key]}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\n" + tt.yaml
			doc = strings.Replace(doc, "line 3", "line 5", 1)
			c, err := bridge.ParseConfig(strings.NewReader(doc))
			if err == nil {
				env := bridge.NewEnv()
				stdio.Register(env)
				_, err = env.NewRoute(c)
			}
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), strings.Replace(tt.wantErr, "line 3", "line 5", 1))
		})
	}
}
