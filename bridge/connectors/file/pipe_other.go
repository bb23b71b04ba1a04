//go:build !unix

package file

import (
	"context"
	"os"
)

// openPipe opens path for writing: only Unix has named pipes in the file
// tree.
func openPipe(_ context.Context, path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}
