//go:build !linux

package benchrun

// touchMemory does nothing here: free page reporting, the reason for it,
// is measured only on Linux (memreport_linux.go).
func touchMemory(int64) error { return nil }
