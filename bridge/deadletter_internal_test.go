package bridge

import "testing"

// recentIDs holds the last ids added and no more; an id added twice stays
// until its second copy is forgotten too.
func TestRecentIDsForgetsTheOldest(t *testing.T) {
	r := newRecentIDs(3)
	for _, id := range []string{"a", "b", "a", "c"} {
		r.add(id) // ring: b a c; "a" was added twice, once still held
	}
	for id, want := range map[string]bool{"a": true, "b": true, "c": true, "z": false} {
		if r.has(id) != want {
			t.Errorf("after a b a c: has(%q) = %v; want %v", id, !want, want)
		}
	}
	r.add("d") // forgets b
	r.add("e") // forgets the second a
	for id, want := range map[string]bool{"a": false, "b": false, "c": true, "d": true, "e": true} {
		if r.has(id) != want {
			t.Errorf("after d e: has(%q) = %v; want %v", id, !want, want)
		}
	}
	if len(r.count) != 3 {
		t.Errorf("count holds %d ids; want 3", len(r.count))
	}
}
