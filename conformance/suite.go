package conformance

// allChecks returns every check in the order Run runs them: the FS
// contract, the spool protocol, the layouts, then the durability loops.
func allChecks() []check {
	var out []check
	out = append(out, fsChecks()...)
	out = append(out, spoolChecks()...)
	out = append(out, streamChecks()...)
	out = append(out, lendChecks()...)
	out = append(out, mismatchChecks()...)
	out = append(out, resumeChecks()...)
	out = append(out, layoutChecks()...)
	out = append(out, faultChecks()...)
	out = append(out, powerCutChecks()...)
	out = append(out, claimChecks()...)
	return out
}

// CheckNames returns the names of every check, in the order Run and Check
// run them. They are stable: use them with go test -run or Config.Match.
func CheckNames() []string {
	var names []string
	for _, c := range allChecks() {
		names = append(names, c.name)
	}
	return names
}
