package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	osfs "github.com/mqb-project/mqb/backend-os"
	"github.com/mqb-project/mqb/conformance"
	"github.com/mqb-project/mqb/core"
)

// holdClaimFlag makes mqb conformance, started by claimAcrossProcesses,
// hold a claim in DIR until its standard input closes or it is killed.
const holdClaimFlag = "hold-claim"

// holdClaim is the second process of ClaimAcrossProcesses: it takes the
// claim name in dir, says "held" on out, and keeps it until in ends.
func holdClaim(dir, name string, in io.Reader, out io.Writer) error {
	fsys, err := osfs.New(dir, osfs.Options{})
	if err != nil {
		return err
	}
	defer fsys.Close()
	c, err := fsys.Lock(name)
	if err != nil {
		return err
	}
	defer c.Release()
	fmt.Fprintln(out, "held")
	_, err = io.Copy(io.Discard, in)
	return err
}

// claimAcrossProcesses checks that a claim held by another process (a
// second mqb) is refused here, and is free again once that process is
// killed, as flock(2) promises and some network filesystems do not keep.
func claimAcrossProcesses(ctx context.Context, dir string) conformance.Result {
	start := time.Now()
	res := conformance.Result{Name: conformance.ClaimAcrossProcesses}
	err := probeClaimAcrossProcesses(ctx, dir)
	res.Duration = time.Since(start)
	var skip skipError
	switch {
	case errors.As(err, &skip):
		res.Skipped, res.Err = true, err.Error()
	case err != nil:
		res.Err = err.Error()
	default:
		res.Passed = true
	}
	return res
}

// skipError is a reason the check could not run at all.
type skipError struct{ error }

func probeClaimAcrossProcesses(ctx context.Context, dir string) error {
	const name = "CONSUMER.lock"
	self, err := os.Executable()
	if err != nil {
		return skipError{fmt.Errorf("cannot start a second mqb: %w", err)}
	}
	fsys, err := osfs.New(dir, osfs.Options{CreateRoot: true})
	if err != nil {
		return err
	}
	defer fsys.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	child := exec.CommandContext(ctx, self, "conformance", "--"+holdClaimFlag, name, dir)
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		return skipError{fmt.Errorf("cannot start a second mqb: %w", err)}
	}
	defer child.Wait() //nolint:errcheck // killed below; its status says nothing
	defer child.Process.Kill()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		return fmt.Errorf("the second process did not take the claim: %s", strings.TrimSpace(stderr.String()))
	}
	if c, err := fsys.Lock(name); err == nil {
		c.Release()
		return errors.New("took a claim that another process holds: claims do not exclude processes here")
	} else if !errors.Is(err, core.ErrLocked) {
		return fmt.Errorf("Lock while another process holds the claim: %w, want core.ErrLocked", err)
	}
	if err := child.Process.Kill(); err != nil {
		return err
	}
	_ = child.Wait()
	// The kernel (or the server) drops the lock of a dead holder; a
	// network filesystem may take a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := fsys.Lock(name)
		if err == nil {
			return c.Release()
		}
		if !errors.Is(err, core.ErrLocked) || time.Now().After(deadline) {
			return fmt.Errorf("the claim of a killed process was not released within 10s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
