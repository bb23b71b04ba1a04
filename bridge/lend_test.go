package bridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// lendingSource is a fakeSource that records whether the route let it
// lend its payload buffers.
type lendingSource struct {
	*fakeSource
	lends bool
}

func (s *lendingSource) LendPayloads() { s.lends = true }

// forgettingTarget is a fakeTarget that says whether it forgets payloads.
type forgettingTarget struct {
	*fakeTarget
	forgets bool
}

func (t *forgettingTarget) ForgetsPayloads() bool { return t.forgets }

// keepingProcessor passes messages on and says nothing of payloads: the
// route must take it for one that may keep them.
type keepingProcessor struct{}

func (keepingProcessor) Process(m *bridge.Message) ([]*bridge.Message, error) {
	return []*bridge.Message{m}, nil
}

// A source may lend payload buffers only when the target, the dead-letter
// target and every processor forget payloads.
func TestRouteLendsOnlyWhenEverythingForgets(t *testing.T) {
	jq, err := bridge.NewJQ(".")
	require.NoError(t, err)
	filter, err := bridge.NewFilter("true")
	require.NoError(t, err)
	forgetting := func(f bool) func(*fakeSource) bridge.Target {
		return func(src *fakeSource) bridge.Target {
			return &forgettingTarget{fakeTarget: &fakeTarget{src: src}, forgets: f}
		}
	}
	plain := func(src *fakeSource) bridge.Target { return &fakeTarget{src: src} }
	for _, c := range []struct {
		name       string
		target, dl func(*fakeSource) bridge.Target
		procs      []bridge.Processor
		want       bool
	}{
		{"the target forgets", forgetting(true), nil, nil, true},
		{"the target says nothing", plain, nil, nil, false},
		{"the target keeps", forgetting(false), nil, nil, false},
		{"the dead-letter target says nothing", forgetting(true), plain, nil, false},
		{"both targets forget", forgetting(true), forgetting(true), nil, true},
		{"a processor says nothing", forgetting(true), nil, []bridge.Processor{&bridge.Metadata{}, keepingProcessor{}}, false},
		{"the built-in processors forget", forgetting(true), nil, []bridge.Processor{jq, filter, &bridge.Metadata{}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &lendingSource{fakeSource: newFakeSource(3)}
			r := newRoute(src.fakeSource, &fakeTarget{})
			r.Source, r.Target = src, c.target(src.fakeSource)
			if c.dl != nil {
				r.DeadLetter, r.DeadLetterOutput = c.dl(src.fakeSource), "fake-dl"
			}
			if c.procs != nil {
				r.Pipeline = &bridge.Pipeline{Processors: c.procs}
			}
			require.NoError(t, r.Run(context.Background()))
			assert.Equal(t, c.want, src.lends)
		})
	}
}
