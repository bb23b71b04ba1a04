package core

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSeqSet(t *testing.T) {
	var s SeqSet
	assert.False(t, s.Has(0), "the zero value is empty")
	in := []uint64{0, 1, 63, 64, 65, 127, 1 << 40, 1<<64 - 1}
	for _, seq := range in {
		s.Add(seq)
		s.Add(seq) // twice is once
	}
	for _, seq := range in {
		assert.True(t, s.Has(seq), "%d", seq)
	}
	for _, seq := range []uint64{2, 62, 66, 128, 1<<40 + 1, 1<<64 - 2} {
		assert.False(t, s.Has(seq), "%d", seq)
	}
	var got []uint64
	s.Each(func(seq uint64) { got = append(got, seq) })
	slices.Sort(got)
	assert.Equal(t, in, got)

	var other SeqSet
	other.Add(1)
	other.Add(64)
	other.Add(2) // not in s
	assert.Equal(t, len(in)-2, s.Without(other))
	assert.Equal(t, 1, other.Without(s))
	assert.Equal(t, len(in), s.Without(nil))
}
