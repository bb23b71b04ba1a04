package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTouchWritesEveryPage: a pass writes the first byte of every page,
// the last one short, and nothing else.
func TestTouchWritesEveryPage(t *testing.T) {
	const page = 4096
	mem := make([]byte, 3*page+10)
	touch(mem, page, 7)
	for i, b := range mem {
		want := byte(0)
		if i%page == 0 {
			want = 7
		}
		require.Equal(t, want, b, "byte %d", i)
	}
	assert.Equal(t, 4, pages(len(mem), page))
}

func TestParseIdles(t *testing.T) {
	got, err := parseIdles("0s, 30s,1m30s")
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 30 * time.Second, 90 * time.Second}, got)
	_, err = parseIdles("30s,-1s")
	assert.ErrorContains(t, err, "-1s is negative")
	_, err = parseIdles("soon")
	assert.Error(t, err)
}
