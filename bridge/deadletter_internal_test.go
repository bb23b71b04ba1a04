package bridge

import (
	"context"
	"fmt"
	"testing"
)

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

// refusesTwice refuses a batch the first two times it holds a message
// whose id starts with x.
type refusesTwice struct{ seen map[string]int }

func (t *refusesTwice) Connect(context.Context) error      { return nil }
func (t *refusesTwice) Close(context.Context, error) error { return nil }
func (t *refusesTwice) WriteBatch(_ context.Context, ms []*Message) error {
	for _, m := range ms {
		if m.ID[0] == 'x' && t.seen[m.ID] < 2 {
			t.seen[m.ID]++
			return fmt.Errorf("%s: %w", m.ID, ErrRejected)
		}
	}
	return nil
}

// A message refused fewer than max_deliveries times and then accepted
// leaves no refusal count behind, so a long route's counts do not grow.
func TestAcceptedMessageForgetsItsRefusals(t *testing.T) {
	r := &Route{Target: &refusesTwice{seen: map[string]int{}}}
	r.dl = &deadLetters{target: &refusesTwice{seen: map[string]int{}}, maxTries: 3,
		attempts: map[string]int{}, window: 10}
	batch := []*Message{{ID: "a1", Payload: []byte("1")}, {ID: "x2", Payload: []byte("2")}}
	if err := r.deliver(context.Background(), batch); err == nil {
		t.Fatal("the first delivery of x2 was not refused") // the batch, then x2 alone
	}
	if got := r.dl.attempts["x2"]; got != 1 {
		t.Fatalf("x2 refused once: attempts = %d; want 1", got)
	}
	if err := r.deliver(context.Background(), batch); err != nil {
		t.Fatalf("second delivery: %v", err)
	}
	if len(r.dl.attempts) != 0 || r.dl.count != 0 {
		t.Errorf("after x2 was accepted: attempts %v, %d dead-lettered; want none", r.dl.attempts, r.dl.count)
	}
}
