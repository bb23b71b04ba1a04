package conformance

import (
	"strings"
)

// ClaimAcrossProcesses names a check that Run and Check cannot do, since it
// needs a second process: that process holds a claim, Lock here must fail
// with core.ErrLocked, and once that process is killed Lock must succeed. A
// caller that can start a process (mqb conformance does) adds a Result of
// this name before calling Verdicts.
const ClaimAcrossProcesses = "ClaimAcrossProcesses"

// Promise is one thing a filesystem must do for a spool to be safe on it,
// and the checks that establish it.
type Promise struct {
	Name   string
	Checks []string // check names; one ending in "*" matches every name with that prefix
	Breaks string   // what goes wrong on a filesystem that does not keep it
	// Untested, when set, says why the promise is UNTESTED when all its
	// checks skip, instead of the first check's skip reason.
	Untested string
}

// Promises returns what Verdicts judges, in order.
func Promises() []Promise {
	return []Promise{
		{"exclusive create", []string{"CreateExcl", "CreateExclRace"},
			"two producers can write the same temporary file", ""},
		{"no-replace rename", []string{"RenameNoReplace", "RenameIntoMissingDir"},
			"a rename can overwrite a message", ""},
		{"atomic rename", []string{"RenameNoReplaceRace", "WriteProtocolOrder", "RecoveryAtOpen"},
			"racing renames can both win, or a reader can see a message before its sidecar", ""},
		{"listings and stat", []string{"ReadDirSorted", "Stat", "Remove", "Mkdir", "FileReadWrite"},
			"messages are delivered out of order or missed", ""},
		{"no symbolic link followed", []string{"SymlinksNotFollowed", "PathValidation"},
			"a link planted in the spool reaches files outside it", ""},
		{"file and directory fsync", []string{"SyncAccepted"},
			"fsync=chunk and fsync=batch fail on every write", ""},
		{"durable across a power cut", []string{"SyncDurability", "PowerCut*"},
			"acknowledged messages are lost in a power cut",
			"needs a crash model; a real mount cannot be power-cut from here (file and directory fsync says the syncs are accepted)"},
		{"claims exclusive in one process", []string{"ClaimExclusive", "ClaimExclusiveRace", "ClaimReleased", "ClaimContent"},
			"two consumers in one process drain the same spool", ""},
		{"claims exclusive across processes (flock)", []string{ClaimAcrossProcesses},
			"two consumer processes drain the same spool, or a dead one's claim is never released", ""},
		{"wake-ups", []string{"DirWatch"},
			"consumers wait for poll_interval instead of waking at once", ""},
		{"spool protocol", []string{"Spool*", "SidecarShape", "FilesOfChangingSize", "PayloadWithoutSidecar", "ForeignFilesIgnored",
			"FIFOAcrossShards", "ProducerConsumerConcurrent", "NackRedeliversFirst", "AckDeletesPayloadThenSidecar",
			"NonDestructiveRead", "DoneSentinel", "StopOnDone", "StaleDoneRemoved", "SequenceNeverReused",
			"ClaimsEnforced", "SequenceExhausted", "CorruptSidecar", "Layout_*", "FaultInjection*",
			"LayoutMismatch*", "LayoutCheckNoFalseAlarm", "ForeignFilesWarnedOnce", "DoneNamesUnseenChunks",
			"BadSidecarDeliverKeepsWhatParses", "ClaimUpdate*", "Streamed*", "Resume*"},
			"the spool itself misbehaves here", ""},
	}
}

// Verdict says whether a run kept one Promise.
type Verdict struct {
	Promise string
	Status  string   // KEPT, BROKEN, or UNTESTED when every check of it was skipped
	Checks  []string // the checks behind Status: the failed ones when BROKEN
	Detail  string   // when BROKEN what breaks; when UNTESTED why
}

// Verdicts judges each Promise from results (of Check, plus any
// ClaimAcrossProcesses result): BROKEN when one of its checks failed, KEPT
// when none failed and one passed, UNTESTED when all were skipped. A
// Promise with no check among results (left out with Config.Match or
// Skip) gets no Verdict.
func Verdicts(results []Result) []Verdict {
	var out []Verdict
	for _, p := range Promises() {
		var passed, failed, skipped []string
		skipWhy := ""
		for _, r := range results {
			if !p.covers(r.Name) {
				continue
			}
			switch {
			case r.Skipped:
				skipped = append(skipped, r.Name)
				if skipWhy == "" {
					skipWhy = firstLine(r.Err)
				}
			case r.Passed:
				passed = append(passed, r.Name)
			default:
				failed = append(failed, r.Name)
			}
		}
		switch {
		case len(failed) > 0:
			out = append(out, Verdict{p.Name, "BROKEN", failed, p.Breaks})
		case len(passed) > 0:
			out = append(out, Verdict{p.Name, "KEPT", passed, ""})
		case len(skipped) > 0:
			if p.Untested != "" {
				skipWhy = p.Untested
			}
			out = append(out, Verdict{p.Name, "UNTESTED", skipped, skipWhy})
		}
	}
	return out
}

func (p Promise) covers(name string) bool {
	for _, c := range p.Checks {
		if prefix, ok := strings.CutSuffix(c, "*"); ok && strings.HasPrefix(name, prefix) || c == name {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
