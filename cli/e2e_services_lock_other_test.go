//go:build !unix

package cli_test

import "testing"

// svcLockBroker does nothing where flock is missing.
func svcLockBroker(*testing.T) {}
