package testutil

import (
	"bufio"
	"io"
	"strings"
)

// SSEEvent is one Server-Sent Event (GET /v1/watch).
type SSEEvent struct{ Event, ID, Data string }

// SSEEvents reads the events of a stream as they come, on a goroutine of
// its own that ends, closing the channel, when body ends (close body, or
// end its request's context, to stop it).
func SSEEvents(body io.Reader) <-chan SSEEvent {
	events := make(chan SSEEvent, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var ev SSEEvent
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "":
				events <- ev
				ev = SSEEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[len("event: "):]
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[len("id: "):]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[len("data: "):]
			}
		}
	}()
	return events
}
