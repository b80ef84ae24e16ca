package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/slotmeta/slotmeta/client"
)

// Exit codes of Run (the package documentation has the table).
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitNotFound     = 3
	exitConflict     = 4
	exitUnavailable  = 5
	exitUnauthorized = 6
)

// Codes the tool gives itself, beside the server's error codes.
const (
	codeUnreachable   client.ErrorCode = "unreachable"    // no endpoint could be connected to, or the connection failed
	codeInvalidAnswer client.ErrorCode = "invalid_answer" // the answer was not what the API promises
	codeCanceled      client.ErrorCode = "canceled"       // interrupted (^C) before an answer came
)

// exitCodes maps every error code of the API (client.ErrorCode) and of the
// tool to an exit code: the one table scripts rely on.
var exitCodes = map[client.ErrorCode]int{
	client.ErrorCodeNotFound: exitNotFound,

	client.ErrorCodeFailedPrecondition: exitConflict,
	client.ErrorCodeConflict:           exitConflict,
	client.ErrorCodeAborted:            exitConflict,
	client.ErrorCodeEpochStale:         exitConflict,

	// Retrying the same request may succeed: the server said so, or the
	// route moved under it (route_revision_mismatch: ask again).
	client.ErrorCodeRouteNotReady:         exitUnavailable,
	client.ErrorCodeNotLeader:             exitUnavailable,
	client.ErrorCodeBusy:                  exitUnavailable,
	client.ErrorCodeSlotMigrating:         exitUnavailable,
	client.ErrorCodeTimeout:               exitUnavailable,
	client.ErrorCodeWrongGroup:            exitUnavailable,
	client.ErrorCodeNoSpace:               exitUnavailable,
	client.ErrorCodeQueueFull:             exitUnavailable,
	client.ErrorCodeRateLimited:           exitUnavailable,
	client.ErrorCodeSlowConsumer:          exitUnavailable,
	client.ErrorCodeRouteRevisionMismatch: exitUnavailable,

	client.ErrorCodeUnauthenticated:  exitUnauthorized,
	client.ErrorCodePermissionDenied: exitUnauthorized,

	// The request reached the server, so these are not usage errors (2
	// promises that nothing was sent).
	client.ErrorCodeInvalidArgument: exitFailure,
	client.ErrorCodePayloadTooLarge: exitFailure,
	client.ErrorCodeCompacted:       exitFailure,
	client.ErrorCodeInternal:        exitFailure,
	codeUnreachable:                 exitFailure,
	codeInvalidAnswer:               exitFailure,
	codeCanceled:                    exitFailure,
}

// exitCodeOf is the exit code of an error: by its code, else (a code this
// build does not know) by whether it may be retried and its status.
func exitCodeOf(code client.ErrorCode, status int, retryable bool) int {
	if c, ok := exitCodes[code]; ok {
		return c
	}
	switch {
	case retryable, status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable, status == http.StatusGatewayTimeout:
		return exitUnavailable
	case status == http.StatusNotFound:
		return exitNotFound
	case status == http.StatusConflict, status == http.StatusPreconditionFailed:
		return exitConflict
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return exitUnauthorized
	}
	return exitFailure
}

// refused reports an answer that is not the success the command expected:
// the server's error JSON as is with -o json, else one line. Anything else
// (a proxy's page, a 2xx without the promised body) is an invalid answer.
func (c *cmd) refused(resp *http.Response, body []byte) int {
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	var eb client.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" || status < 400 {
		// Not the API's answer; its status still tells a 503 or a 404.
		code := exitFailure
		if status >= 400 {
			code = exitCodeOf("", status, false)
		}
		return c.failWith(client.Error{Code: codeInvalidAnswer,
			Message: fmt.Sprintf("HTTP %d: %s", status, strings.TrimSpace(string(body[:min(len(body), 200)])))}, code)
	}
	code := exitCodeOf(eb.Error.Code, status, eb.Error.Retryable)
	if c.s.cfg.Output == "json" {
		writeJSON(c.s.stderr, body)
		return code
	}
	c.errorLine(eb.Error, code)
	return code
}

// netError reports a request that got no answer: the deadline passed
// (retryable, 5) or no connection could be made or kept (1).
func (c *cmd) netError(err error) int {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return c.fail(client.Error{Code: client.ErrorCodeTimeout, Retryable: true,
			Message: fmt.Sprintf("no answer within %v: %v", c.s.cfg.Timeout, err)})
	}
	if errors.Is(err, context.Canceled) {
		return c.fail(client.Error{Code: codeCanceled, Message: err.Error()})
	}
	return c.fail(client.Error{Code: codeUnreachable, Message: err.Error()})
}

// fail reports an error the tool made up: as error JSON with -o json.
func (c *cmd) fail(e client.Error) int {
	return c.failWith(e, exitCodeOf(e.Code, 0, e.Retryable))
}

func (c *cmd) failWith(e client.Error, code int) int {
	if c.s.cfg.Output == "json" {
		b, _ := json.Marshal(client.ErrorBody{Error: e})
		writeJSON(c.s.stderr, b)
		return code
	}
	c.errorLine(e, code)
	return code
}

// errorLine writes "error: <code>: <message>", the fields a refusal names
// (a leader transfer's blockers) and, for a write that may have been
// applied, how to retry it so it applies once.
func (c *cmd) errorLine(e client.Error, code int) {
	msg := e.Message
	if e.Details != nil && len(*e.Details) > 0 {
		var ds []string
		for _, d := range *e.Details {
			ds = append(ds, d.Field+": "+d.Reason)
		}
		msg += " (" + strings.Join(ds, "; ") + ")"
	}
	if e.LeaderHint != nil {
		msg += fmt.Sprintf(" (leader: node %d)", *e.LeaderHint)
	}
	fmt.Fprintf(c.s.stderr, "error: %s: %s\n", e.Code, msg)
	if code == exitUnavailable && c.dataWrite() && c.idemKey != "" {
		fmt.Fprintf(c.s.stderr, "retry with --idempotency-key %s to apply it at most once\n", c.idemKey)
	}
}

func errorf(code client.ErrorCode, format string, a ...any) client.Error {
	return client.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// dataWrite: the command writes data (keys, users, channels, subscribers),
// whose paths honour an Idempotency-Key; the cluster's operations take
// none, so a retry of one is not made safe by the key.
func (c *cmd) dataWrite() bool {
	switch c.noun {
	case "kv", "user", "channel", "subscriber":
		return c.v.write
	}
	return false
}
