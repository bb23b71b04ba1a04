package stdio_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/stdio"
)

func TestStdinToStdout(t *testing.T) {
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.DiscardHandler)
	stdio.Register(e)
	var out bytes.Buffer
	e.Stdin, e.Stdout = strings.NewReader("id,qty\nA,1\nB,2\n"), &out
	r, err := e.FromConfig(strings.NewReader("input: {stdin: {format: csv}}\noutput: {url: \"stdout://?format=json\"}\n"))
	require.NoError(t, err)
	require.NoError(t, r.Run(context.Background()))
	assert.Equal(t, "{\"id\":\"A\",\"qty\":\"1\"}\n{\"id\":\"B\",\"qty\":\"2\"}\n", out.String())
}

// A read from a terminal that never ends does not keep an interrupted route
// from stopping.
func TestStdinReadIsInterruptible(t *testing.T) {
	e := bridge.NewEnv()
	e.Logger = slog.New(slog.DiscardHandler)
	stdio.Register(e)
	pr, pw := io.Pipe()
	defer pw.Close()
	e.Stdin, e.Stdout = pr, io.Discard
	r, err := e.FromConfig(strings.NewReader("input: {url: \"stdin://\"}\noutput: {url: \"stdout://\"}\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = r.Run(ctx)
	assert.ErrorIs(t, err, bridge.ErrInterrupted)
}

func TestStdinTakesNoPath(t *testing.T) {
	e := bridge.NewEnv()
	stdio.Register(e)
	_, _, err := e.NewSource(bridge.Endpoint{URL: "stdin:///dev/tty"})
	require.ErrorIs(t, err, bridge.ErrConfig)
	assert.Contains(t, err.Error(), "stdin takes no host or path")
}
