package file

import (
	"errors"
	"fmt"
	"os"

	"github.com/mqb-project/mqb/bridge"
)

// errWriterBusy is matched by the error of a target whose output file
// another writer holds.
var errWriterBusy = errors.New("another writer holds the file")

// lockOutput takes the writer lock of the output file f (see lockWriter):
// two targets appending to one file at offsets each keeps for itself would
// write over each other's acknowledged records. It fails at once, and for
// good, when another route or process holds it, naming that process where
// the system tells.
func lockOutput(f *os.File, path string) error {
	err := lockWriter(f)
	if !errors.Is(err, errWriterBusy) {
		return err
	}
	who := "another process"
	switch pid := writerPID(f); {
	case pid == os.Getpid():
		who = "another route of this mqb process"
	case pid > 0:
		who = fmt.Sprintf("pid %d on this host", pid)
	}
	return bridge.Permanent(fmt.Errorf("output %s is being written by %s (%w): a file takes one writer at a time; give each route a file of its own",
		path, who, errWriterBusy))
}
