//go:build !unix

package core

import (
	"errors"
	"os"
)

// flockNB fails: rootFS has claims only where flock exists.
func flockNB(*os.File) error { return errors.ErrUnsupported }
