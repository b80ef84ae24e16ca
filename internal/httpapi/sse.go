package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// progressJSON is the data of a progress event.
type progressJSON struct {
	TimeMs int64 `json:"time_ms"` // the serving node's clock
}

// watchWriteTimeout bounds the writes to the client: a client that stops
// reading is cut within it (at least half of it: the deadline moves every
// half, sse.setDeadline), not waited for (the server's WriteTimeout is for
// one whole answer, which a stream is not).
const watchWriteTimeout = 30 * time.Second

// sse writes Server-Sent Events.
type sse struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	m        *metrics
	deadline time.Time // of the connection's writes (setDeadline)
	buf      []byte
}

// startSSE answers 200 with a stream's headers. (The server's ReadTimeout
// does not end it: net/http clears the read deadline of the background
// read it runs while a handler serves; TestWatchOutlivesTheServersTimeouts.)
func startSSE(w http.ResponseWriter, m *metrics) *sse {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: rc, m: m}
}

func (s *sse) send(event string, cur watch.Cursor, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return s.frame(event, cur.String(), b)
}

// frame writes one event (id "": none), counts it and flushes it.
func (s *sse) frame(event, id string, data []byte) error {
	if err := s.put(event, id, data); err != nil {
		return err
	}
	return s.flush()
}

// put writes one event (id "": none) and counts it, leaving it in the
// response's buffer: a multiplexed stream writes what one wake-up brought
// and flushes once (one write to the connection, not one an event).
func (s *sse) put(event, id string, data []byte) error {
	s.buf = append(append(s.buf[:0], "event: "...), event...)
	if id != "" {
		s.buf = append(append(s.buf, "\nid: "...), id...)
	}
	s.buf = append(append(append(s.buf, "\ndata: "...), data...), "\n\n"...)
	s.m.watchEvents.WithLabelValues(event).Inc()
	s.setDeadline()
	_, err := s.w.Write(s.buf)
	return err
}

// flush sends what put left in the buffer.
func (s *sse) flush() error { return s.rc.Flush() }

// setDeadline keeps the connection's write deadline watchWriteTimeout
// ahead, moving it only once half of it has passed (a deadline set per
// event costs a timer update on every write).
func (s *sse) setDeadline() {
	if now := time.Now(); s.deadline.Sub(now) < watchWriteTimeout/2 {
		s.deadline = now.Add(watchWriteTimeout)
		_ = s.rc.SetWriteDeadline(s.deadline)
	}
}

// fail ends a stream with an error event.
func (s *sse) fail(cur watch.Cursor, e *slotstore.Error) {
	s.m.watchEnds.WithLabelValues(string(e.Code)).Inc()
	_ = s.send("error", cur, errorBody{Error: errorJSONOf(e)})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sendRaw writes an event without an id (the route stream has no position).
func (s *sse) sendRaw(event string, data []byte) error { return s.frame(event, "", data) }
