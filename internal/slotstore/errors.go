package slotstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code is the machine-readable kind of an error. The HTTP adapter maps each
// Code to a status in exactly one table.
type Code string

const (
	CodeInvalidArgument       Code = "invalid_argument"
	CodeUnauthenticated       Code = "unauthenticated"
	CodePermissionDenied      Code = "permission_denied"
	CodeNotFound              Code = "not_found"
	CodeConflict              Code = "conflict"
	CodeEpochStale            Code = "epoch_stale"
	CodeRouteRevisionMismatch Code = "route_revision_mismatch"
	CodeFailedPrecondition    Code = "failed_precondition"
	CodePayloadTooLarge       Code = "payload_too_large"
	CodeQueueFull             Code = "queue_full"
	CodeRateLimited           Code = "rate_limited"
	CodeRouteNotReady         Code = "route_not_ready"
	CodeNotLeader             Code = "not_leader"
	CodeBusy                  Code = "busy"
	CodeSlotMigrating         Code = "slot_migrating"
	CodeTimeout               Code = "timeout"
	CodeWrongGroup            Code = "wrong_group"
	// The node that would lead the write has too little disk left (package
	// diskguard): retryable, once space is freed or leadership moved.
	CodeNoSpace  Code = "no_space"
	CodeInternal Code = "internal"
	// The change feed's (GET /v1/watch): a position older than what the
	// change log keeps, and a watcher cut for falling too far behind (it
	// resumes from its cursor).
	CodeCompacted    Code = "compacted"
	CodeSlowConsumer Code = "slow_consumer"
	// An operation of an atomic batch that was not applied because another
	// operation of the same batch failed (its own was fine).
	CodeAborted Code = "aborted"
)

// Retryable reports whether a client may retry the same request unchanged.
func (c Code) Retryable() bool {
	switch c {
	case CodeQueueFull, CodeRateLimited, CodeRouteNotReady, CodeNotLeader, CodeBusy, CodeSlotMigrating, CodeTimeout, CodeWrongGroup, CodeSlowConsumer, CodeNoSpace:
		return true
	}
	return false
}

// FieldError is one rejected field of a request.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is the one error type of slotmeta. Every layer returns it (wrapped with
// %w where context helps); the HTTP adapter renders it as the error JSON of docs/design.md §10.
type Error struct {
	Code          Code
	Message       string
	LeaderHint    NodeID        // not_leader: the newest leader this node knows of
	LeaderTerm    uint64        // the term LeaderHint was observed at (0: unknown)
	RouteRevision uint64        // route_revision_mismatch: the node's current revision
	RetryAfter    time.Duration // retryable errors: when to come back
	Details       []FieldError
	Err           error // the underlying cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.Err == nil
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error of code around a cause.
func Wrap(code Code, err error, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// Sentinels for errors.Is. Compare codes with ErrorCode where a message matters.
var (
	ErrNotFound      = &Error{Code: CodeNotFound}
	ErrConflict      = &Error{Code: CodeConflict}
	ErrRouteNotReady = &Error{Code: CodeRouteNotReady}
	ErrQueueFull     = &Error{Code: CodeQueueFull}
	ErrBusy          = &Error{Code: CodeBusy}
	ErrTimeout       = &Error{Code: CodeTimeout}
	ErrWrongGroup    = &Error{Code: CodeWrongGroup}
	ErrNotLeader     = &Error{Code: CodeNotLeader}
)

// ErrorCode returns the Code of err: the code of the first *Error in its chain,
// CodeTimeout for a context deadline or cancellation, and CodeInternal for
// anything else.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return CodeTimeout
	}
	return CodeInternal
}

// AsError returns err as an *Error, converting anything unknown to internal.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: ErrorCode(err), Message: err.Error(), Err: err}
}
