package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core"
	"github.com/mqb-project/mqb/core/option"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// usageError is a mistake in how the command was called: exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err}
}

// exitCode maps an error to the process exit code. sig is the number of
// the signal that interrupted the command, 0 if none.
func exitCode(err error, sig int) int {
	var ue *usageError
	switch {
	case err == nil:
		return ExitOK
	case sig != 0 && (errors.Is(err, bridge.ErrInterrupted) || errors.Is(err, context.Canceled)):
		return 128 + sig
	case errors.As(err, &ue), errors.Is(err, bridge.ErrConfig), errors.Is(err, option.ErrInvalid),
		errors.Is(err, core.ErrLayoutMismatch): // the options do not fit the spool
		return ExitUsage
	}
	return ExitFailure
}

// oneLine flattens an error message so that it prints as one line, with
// every known password replaced.
func oneLine(err error, redact func(string) string) string {
	return redact(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
}
