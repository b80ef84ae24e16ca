package httpapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// statusOf is THE table from an error code to its HTTP status (docs/design.md §10).
// A code that is missing here answers 500.
var statusOf = map[slotstore.Code]int{
	slotstore.CodeInvalidArgument:       http.StatusBadRequest,
	slotstore.CodeUnauthenticated:       http.StatusUnauthorized,
	slotstore.CodePermissionDenied:      http.StatusForbidden,
	slotstore.CodeNotFound:              http.StatusNotFound,
	slotstore.CodeConflict:              http.StatusConflict,
	slotstore.CodeEpochStale:            http.StatusConflict,
	slotstore.CodeRouteRevisionMismatch: http.StatusConflict,
	slotstore.CodeFailedPrecondition:    http.StatusPreconditionFailed,
	slotstore.CodePayloadTooLarge:       http.StatusRequestEntityTooLarge,
	slotstore.CodeQueueFull:             http.StatusTooManyRequests,
	slotstore.CodeRateLimited:           http.StatusTooManyRequests,
	slotstore.CodeRouteNotReady:         http.StatusServiceUnavailable,
	slotstore.CodeNotLeader:             http.StatusServiceUnavailable,
	slotstore.CodeBusy:                  http.StatusServiceUnavailable,
	slotstore.CodeSlotMigrating:         http.StatusServiceUnavailable,
	slotstore.CodeTimeout:               http.StatusServiceUnavailable,
	slotstore.CodeWrongGroup:            http.StatusServiceUnavailable,
	slotstore.CodeNoSpace:               http.StatusServiceUnavailable,
	slotstore.CodeInternal:              http.StatusInternalServerError,
	slotstore.CodeCompacted:             http.StatusGone,
	slotstore.CodeSlowConsumer:          http.StatusTooManyRequests, // only ever in a stream's error event
	slotstore.CodeAborted:               http.StatusConflict,        // only ever an item of a batch's answer
}

// httpStatus returns the status of code.
func httpStatus(code slotstore.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the error JSON of docs/design.md §10.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code          slotstore.Code         `json:"code"`
	Message       string                 `json:"message"`
	Retryable     bool                   `json:"retryable"`
	LeaderHint    slotstore.NodeID       `json:"leader_hint,omitempty"`
	RouteRevision uint64                 `json:"route_revision,omitempty"`
	Details       []slotstore.FieldError `json:"details,omitempty"`
}

// toError turns any error into the *slotstore.Error to render. Only errors
// that already are one keep their message when they are internal: the text
// of an unexpected error is logged, not shown.
func toError(err error) *slotstore.Error {
	var e *slotstore.Error
	switch {
	case errors.As(err, &e) && e.Code != "":
		return e
	case errors.Is(err, context.DeadlineExceeded):
		return &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the request deadline passed", Err: err}
	case errors.Is(err, context.Canceled):
		return &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the request was cancelled", Err: err}
	}
	return &slotstore.Error{Code: slotstore.CodeInternal, Message: "internal error", Err: err}
}

// writeError renders err with the status its code maps to.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := toError(err)
	a.writeErrorStatus(w, r, httpStatus(e.Code), e)
}

// writeErrorStatus renders e with an explicit status. Only routing answers
// that have no Code of their own (405) call it directly.
func (a *api) writeErrorStatus(w http.ResponseWriter, r *http.Request, status int, e *slotstore.Error) {
	noteError(r, e)
	retryable := e.Code.Retryable()
	switch {
	case status >= 500 && !retryable:
		a.log.Error("httpapi: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", e)
	case status >= 500 && r.URL.Path != "/readyz":
		// Retryable unavailability (no leader yet, queue full, busy) is
		// expected under elections and overload: worth seeing, not alarming.
		a.log.Warn("httpapi: request unavailable", "method", r.Method, "path", r.URL.Path, "status", status, "err", e)
	default:
		a.log.Debug("httpapi: request rejected", "method", r.Method, "path", r.URL.Path, "status", status, "err", e)
	}
	if retryable {
		w.Header().Set("Retry-After", retryAfterSeconds(e))
	}
	a.writeJSON(w, r, status, errorBody{Error: errorJSONOf(e)})
}

// errorJSONOf is e as the API shows it: in an error answer, and in the
// items of a batch answer.
func errorJSONOf(e *slotstore.Error) errorJSON {
	return errorJSON{Code: e.Code, Message: e.Message, Retryable: e.Code.Retryable(),
		LeaderHint: e.LeaderHint, RouteRevision: e.RouteRevision, Details: e.Details}
}

// retryAfterSeconds is e.RetryAfter in whole seconds, rounded up, at least 1.
func retryAfterSeconds(e *slotstore.Error) string {
	s := int64(math.Ceil(e.RetryAfter.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}

// invalid builds an invalid_argument error.
func invalid(format string, args ...any) *slotstore.Error {
	return slotstore.Errorf(slotstore.CodeInvalidArgument, format, args...)
}

// fieldErrors builds an invalid_argument error that lists rejected fields.
func fieldErrors(details ...slotstore.FieldError) *slotstore.Error {
	parts := make([]string, len(details))
	for i, d := range details {
		parts[i] = d.Field + ": " + d.Reason
	}
	return &slotstore.Error{
		Code:    slotstore.CodeInvalidArgument,
		Message: fmt.Sprintf("invalid request: %s", strings.Join(parts, "; ")),
		Details: details,
	}
}

// invalidField is fieldErrors for one field.
func invalidField(field, reason string) *slotstore.Error {
	return fieldErrors(slotstore.FieldError{Field: field, Reason: reason})
}
