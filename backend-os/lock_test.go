//go:build linux

package osfs_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/core"
)

// lockHelperEnv, when set to a spool root, turns the test binary into a
// process that holds the PRODUCER claim there until it is killed.
const lockHelperEnv = "OSFS_TEST_LOCK_HELPER_ROOT"

func TestMain(m *testing.M) {
	if root := os.Getenv(lockHelperEnv); root != "" {
		holdClaim(root)
		return
	}
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(runHelper(role))
	}
	os.Exit(m.Run())
}

func holdClaim(root string) {
	fsys, err := osfs.New(root, osfs.Options{})
	if err == nil {
		var c core.Claim
		if c, err = fsys.Lock("PRODUCER"); err == nil {
			_, err = c.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
		}
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	for {
		time.Sleep(time.Hour)
	}
}

func TestLock(t *testing.T) {
	forEachResolution(t, func(t *testing.T, fsys *osfs.FS, root string) {
		path := filepath.Join(root, "PRODUCER")
		c, err := fsys.Lock("PRODUCER")
		require.NoError(t, err)
		require.FileExists(t, path, "Lock creates the claim file")

		// Held: by the same FS, and by another FS of this process.
		_, err = fsys.Lock("PRODUCER")
		requirePathErr(t, err, "PRODUCER", core.ErrLocked)
		_, err = newFS(t, root).Lock("PRODUCER")
		requirePathErr(t, err, "PRODUCER", core.ErrLocked)

		// WriteAt writes in place, never truncating; Sync flushes.
		for _, w := range []struct {
			data string
			off  int64
		}{{`{"pid": 1234567}`, 0}, {`{"pid": 1}`, 0}, {"x", 20}} {
			n, err := c.WriteAt([]byte(w.data), w.off)
			require.NoError(t, err)
			require.Equal(t, len(w.data), n)
			require.NoError(t, c.Sync())
		}
		const want = "{\"pid\": 1}34567}\x00\x00\x00\x00x"
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, want, string(b))

		// Release keeps the file, and the claim can be taken again.
		require.NoError(t, c.Release())
		require.FileExists(t, path)
		requirePathErr(t, c.Release(), "PRODUCER", fs.ErrClosed)
		_, err = c.WriteAt(nil, 0)
		requirePathErr(t, err, "PRODUCER", fs.ErrClosed)
		requirePathErr(t, c.Sync(), "PRODUCER", fs.ErrClosed)
		c, err = fsys.Lock("PRODUCER")
		require.NoError(t, err)
		b, err = os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, want, string(b), "Lock keeps the previous holder's record")
		require.NoError(t, c.Release())

		// Claims in subdirectories; errors.
		require.NoError(t, fsys.Mkdir("d"))
		c, err = fsys.Lock("d/CONSUMER")
		require.NoError(t, err)
		require.NoError(t, c.Release())
		_, err = fsys.Lock("nodir/CONSUMER")
		requirePathErr(t, err, "nodir/CONSUMER", fs.ErrNotExist)
		_, err = fsys.Lock("d")
		require.Error(t, err)
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
		_, err = fsys.Lock("fifo")
		requirePathErr(t, err, "fifo", osfs.ErrNotRegular)
	})
}

func TestLockRace(t *testing.T) {
	root := t.TempDir()
	const racers = 8
	var wg sync.WaitGroup
	claims := make([]core.Claim, racers)
	errs := make([]error, racers)
	start := make(chan struct{})
	for i := range racers {
		fsys := newFS(t, root)
		wg.Go(func() {
			<-start
			claims[i], errs[i] = fsys.Lock("CONSUMER")
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			require.NoError(t, claims[i].Release())
			continue
		}
		require.ErrorIs(t, err, core.ErrLocked)
	}
	require.Equal(t, 1, won)
}

// TestLockOtherProcess holds the claim in a separate process, then kills it
// with SIGKILL: the kernel must release the lock with the process.
func TestLockOtherProcess(t *testing.T) {
	root := t.TempDir()
	fsys := newFS(t, root)

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+root)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, err = fsys.Lock("PRODUCER")
	requirePathErr(t, err, "PRODUCER", core.ErrLocked)
	b, err := os.ReadFile(filepath.Join(root, "PRODUCER"))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(cmd.Process.Pid), string(b))

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	waited = true
	err = cmd.Wait()
	require.Error(t, err, "the helper was killed")

	c, err := fsys.Lock("PRODUCER")
	require.NoError(t, err, "the lock must be free once its holder is dead")
	require.NoError(t, c.Release())
	require.FileExists(t, filepath.Join(root, "PRODUCER"))
}
