package core

import "math/bits"

// SeqSet is a set of chunk sequence numbers kept as 64-bit words: numbers
// that are mostly consecutive, as a spool's are, take about a bit each. The
// zero value is an empty set; Add makes its map.
type SeqSet map[uint64]uint64

// Add puts seq in the set.
func (s *SeqSet) Add(seq uint64) {
	if *s == nil {
		*s = SeqSet{}
	}
	(*s)[seq>>6] |= 1 << (seq & 63)
}

// Has reports whether seq is in the set.
func (s SeqSet) Has(seq uint64) bool { return s[seq>>6]&(1<<(seq&63)) != 0 }

// Each calls fn with every number of the set, in no particular order.
func (s SeqSet) Each(fn func(seq uint64)) {
	for k, w := range s {
		for ; w != 0; w &= w - 1 {
			fn(k<<6 | uint64(bits.TrailingZeros64(w)))
		}
	}
}

// Without counts the numbers of the set that are not in other.
func (s SeqSet) Without(other SeqSet) int {
	n := 0
	for k, w := range s {
		n += bits.OnesCount64(w &^ other[k])
	}
	return n
}
