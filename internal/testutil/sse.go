package testutil

import (
	"io"

	"github.com/slotmeta/slotmeta/client"
)

// SSEEvent is one Server-Sent Event (GET /v1/watch).
type SSEEvent struct{ Event, ID, Data string }

// SSEEvents reads the events of a stream as they come (client.ReadSSE), on
// a goroutine of its own that ends, closing the channel, when body ends
// (close body, or end its request's context, to stop it).
func SSEEvents(body io.Reader) <-chan SSEEvent {
	events := make(chan SSEEvent, 64)
	go func() {
		defer close(events)
		_ = client.ReadSSE(body, func(ev client.SSEEvent) error {
			events <- SSEEvent{Event: ev.Event, ID: ev.ID, Data: string(ev.Data)}
			return nil
		})
	}()
	return events
}
