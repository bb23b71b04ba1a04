//go:build !linux && !darwin && !freebsd

package benchrun

import (
	"path/filepath"
	"runtime"
)

// DescribeMachine reports the machine; the filesystem type of dir is not
// looked up on this system.
func DescribeMachine(dir string) Machine {
	m := Machine{Dir: dir, FSType: "unknown", CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), GOARCH: runtime.GOARCH}
	if abs, err := filepath.Abs(dir); err == nil {
		m.Dir = abs
	}
	return m
}
