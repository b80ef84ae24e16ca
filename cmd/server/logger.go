package main

import (
	"io"
	"log/slog"
)

// newLogger is the process's logger: text lines on w at level, every error
// attribute written as its message (issue 51). slog's text handler formats
// an error with %+v, and the engine's errors (dragonboat's, made with
// cockroachdb/errors) print their whole stack for it: a tombstoned
// replica's "node removed" carried some forty lines of frames inside
// err="…". Error() keeps the message and the causes it wraps — what an
// operator reads — on the line it belongs to.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: errorMessages}))
}

// errorMessages is the handler's ReplaceAttr: an error value becomes its
// message, anything else stays as it is.
func errorMessages(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	if err, ok := a.Value.Any().(error); ok && err != nil {
		return slog.String(a.Key, err.Error())
	}
	return a
}
