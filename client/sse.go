package client

import (
	"bufio"
	"bytes"
	"io"
)

// SSEEvent is one server-sent event of a stream (GET /v1/watch): its
// name, its id (the cursor after it; empty for events without one) and
// its data, one JSON document.
type SSEEvent struct {
	Event string
	ID    string
	Data  []byte // valid until the handler returns
}

// maxSSELine bounds one line of a stream: an event's data is one line, and
// the server bounds a change's rows well below it.
const maxSSELine = 16 << 20

// ReadSSE reads the events of r, the body of a text/event-stream answer,
// handing each to handle in order until r ends (nil), a line is over the
// bound or cannot be read, or handle returns an error (returned as is).
// It reads the subset of the format slotmeta writes: "event:", "id:" and
// one "data:" line per event, comments (":") ignored.
func ReadSSE(r io.Reader, handle func(SSEEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSSELine)
	var ev SSEEvent
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			ev.Event = string(line[len("event: "):])
		case bytes.HasPrefix(line, []byte("id: ")):
			ev.ID = string(line[len("id: "):])
		case bytes.HasPrefix(line, []byte("data: ")):
			ev.Data = append(ev.Data[:0], line[len("data: "):]...)
		case len(line) == 0:
			if ev.Event != "" || len(ev.Data) > 0 {
				if err := handle(ev); err != nil {
					return err
				}
			}
			ev = SSEEvent{Data: ev.Data[:0]}
		}
	}
	return sc.Err()
}
