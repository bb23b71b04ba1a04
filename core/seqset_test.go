package core

import (
	"slices"
	"testing"
)

func TestSeqSet(t *testing.T) {
	var s SeqSet
	if s.Has(0) {
		t.Fatal("the zero value holds 0")
	}
	in := []uint64{0, 1, 63, 64, 65, 127, 1 << 40, 1<<64 - 1}
	for _, seq := range in {
		s.Add(seq)
		s.Add(seq) // twice is once
	}
	for _, seq := range in {
		if !s.Has(seq) {
			t.Errorf("%d added, not in the set", seq)
		}
	}
	for _, seq := range []uint64{2, 62, 66, 128, 1<<40 + 1, 1<<64 - 2} {
		if s.Has(seq) {
			t.Errorf("%d not added, in the set", seq)
		}
	}
	var got []uint64
	s.Each(func(seq uint64) { got = append(got, seq) })
	slices.Sort(got)
	if !slices.Equal(in, got) {
		t.Errorf("Each gave %v, want %v", got, in)
	}

	var other SeqSet
	other.Add(1)
	other.Add(64)
	other.Add(2) // not in s
	for _, c := range []struct {
		got, want int
		what      string
	}{
		{s.Without(other), len(in) - 2, "s without other"},
		{other.Without(s), 1, "other without s"},
		{s.Without(nil), len(in), "s without nothing"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
}
