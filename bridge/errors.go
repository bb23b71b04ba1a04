package bridge

import (
	"errors"
	"fmt"
)

var (
	// ErrConfig is returned (wrapped in a *ConfigError) when a route or an
	// endpoint is described wrongly: an unknown scheme or connector, a
	// malformed URL, unreadable YAML, a bad option. It is a usage error:
	// running again without changing the configuration cannot succeed.
	ErrConfig = errors.New("invalid route configuration")

	// ErrUnknownEndpoint is returned (wrapped in a *ConfigError) for a URL
	// scheme or a YAML connector name that no registered connector has.
	ErrUnknownEndpoint = errors.New("unknown endpoint")

	// ErrMalformedInput is returned by a source when a record of its input
	// cannot be parsed in the configured format. The concrete error is a
	// *RecordError naming the file and the line. Sources never skip such a
	// record.
	ErrMalformedInput = errors.New("malformed input record")

	// ErrPermanent is returned (see Permanent) by a target for a failure
	// that retrying cannot fix, such as a payload the target format cannot
	// hold. The route then stops instead of retrying.
	ErrPermanent = errors.New("permanent failure")

	// ErrRejected is returned (see Reject) by a target that refuses a
	// message for what it holds: a violated constraint, a value of the wrong
	// type, a payload the target format cannot hold. It matches ErrPermanent
	// too. A route with a dead-letter target moves the refused message there
	// and goes on; without one it stops, as for any permanent failure.
	ErrRejected = errors.New("message rejected by the target")

	// ErrInterrupted is returned by Route.Run when its context ended before
	// the input did. Every message read by then was settled: written and
	// acknowledged, or negatively acknowledged for redelivery.
	ErrInterrupted = errors.New("route interrupted")

	// ErrRetriesExhausted is returned by Route.Run when a batch still
	// failed to be written after the configured number of retries.
	ErrRetriesExhausted = errors.New("write retries exhausted")
)

// ConfigError is the error for a route or endpoint described wrongly. Where
// says where (a YAML position, "input", "--from"); Err says what, and names
// the valid choices where there are any.
type ConfigError struct {
	Where string
	Err   error
}

func (e *ConfigError) Error() string {
	if e.Where == "" {
		return e.Err.Error()
	}
	return e.Where + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is reports ErrConfig.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

func configErr(where string, err error) error {
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Where == "" {
		return &ConfigError{Where: where, Err: ce.Err}
	}
	return &ConfigError{Where: where, Err: err}
}

// RecordError is the error for an input record that cannot be parsed.
type RecordError struct {
	Path string // the file, or "stdin"
	Line int    // 1-based line where the record starts; 0 when unknown
	Err  error
}

func (e *RecordError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *RecordError) Unwrap() error { return e.Err }

// Is reports ErrMalformedInput.
func (e *RecordError) Is(target error) bool { return target == ErrMalformedInput }

// Permanent marks err as one that retrying cannot fix: a route that gets it
// from Target.WriteBatch negatively acknowledges the batch and stops.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Reject marks err as the target's refusal of a message for what it holds
// (see ErrRejected). When a batch fails with it, the route narrows the batch
// down to the messages at fault.
func Reject(err error) error {
	if err == nil {
		return nil
	}
	return &rejectedError{err}
}

type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() error { return e.err }
func (e *rejectedError) Is(target error) bool {
	return target == ErrRejected || target == ErrPermanent
}
