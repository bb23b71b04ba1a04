//go:build !linux && !darwin && !freebsd

package benchrun

import (
	"fmt"
	"runtime"
	"time"
)

// rawBatchStrategies are the fsync=batch baselines measured here.
var rawBatchStrategies = []string{RawPerFile}

// rawArm fails: the raw baseline is written with Unix system calls, and
// backend-os does not run on this system either.
func (t *Trial) rawArm(string, string, rawNames, string, []byte) (*arm, error) {
	return nil, fmt.Errorf("the raw baseline of mqb bench needs Linux, macOS or FreeBSD, not %s", runtime.GOOS)
}

// syncfsPath does nothing: no spool or baseline writes here to flush.
func syncfsPath(string) error { return nil }

func rawScale(string, int, int, string, bool, []byte, []byte) (rawScaleCost, error) {
	return rawScaleCost{}, fmt.Errorf("the raw baseline of mqb bench needs Linux, macOS or FreeBSD, not %s", runtime.GOOS)
}

func rawListMs(string) (float64, error) {
	return 0, fmt.Errorf("the raw baseline of mqb bench needs Linux, macOS or FreeBSD, not %s", runtime.GOOS)
}

// cpuNow is not measured here.
func cpuNow() time.Duration { return 0 }
