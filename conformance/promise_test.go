package conformance_test

import (
	"reflect"
	"testing"

	"github.com/mqb-project/mqb/conformance"
)

// TestEveryCheckBacksAPromise fails when a check is added that no Promise
// names, so mqb conformance would run it without saying what it means.
func TestEveryCheckBacksAPromise(t *testing.T) {
	for _, name := range append(conformance.CheckNames(), conformance.ClaimAcrossProcesses) {
		res := conformance.Verdicts([]conformance.Result{{Name: name, Passed: true}})
		if len(res) != 1 {
			t.Errorf("check %s backs %d promises, want 1: %+v", name, len(res), res)
		}
	}
}

func TestVerdicts(t *testing.T) {
	pass := func(n string) conformance.Result { return conformance.Result{Name: n, Passed: true} }
	fail := func(n string) conformance.Result { return conformance.Result{Name: n, Err: "boom"} }
	skip := func(n string) conformance.Result {
		return conformance.Result{Name: n, Skipped: true, Err: "no crash model\nmore"}
	}
	tests := []struct {
		name    string
		results []conformance.Result
		want    []conformance.Verdict
	}{
		{"a failure breaks the promise", []conformance.Result{pass("RenameNoReplace"), fail("RenameIntoMissingDir")},
			[]conformance.Verdict{{Promise: "no-replace rename", Status: "BROKEN", Checks: []string{"RenameIntoMissingDir"},
				Detail: "a rename can overwrite a message"}}},
		{"passes keep it", []conformance.Result{pass("CreateExcl"), pass("CreateExclRace")},
			[]conformance.Verdict{{Promise: "exclusive create", Status: "KEPT", Checks: []string{"CreateExcl", "CreateExclRace"}}}},
		{"skips alone leave it untested", []conformance.Result{skip("SyncDurability"), skip("PowerCutChunk")},
			[]conformance.Verdict{{Promise: "durable across a power cut", Status: "UNTESTED",
				Checks: []string{"SyncDurability", "PowerCutChunk"},
				Detail: "needs a crash model; a real mount cannot be power-cut from here (file and directory fsync says the syncs are accepted)"}}},
		{"otherwise the skip reason says why", []conformance.Result{skip("DirWatch")},
			[]conformance.Verdict{{Promise: "wake-ups", Status: "UNTESTED", Checks: []string{"DirWatch"}, Detail: "no crash model"}}},
		{"a skip beside a pass is kept", []conformance.Result{skip("Layout_DocsExample"), pass("SpoolRoundTrip")},
			[]conformance.Verdict{{Promise: "spool protocol", Status: "KEPT", Checks: []string{"SpoolRoundTrip"}}}},
		{"checks not run judge nothing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := conformance.Verdicts(tt.results); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Verdicts = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
