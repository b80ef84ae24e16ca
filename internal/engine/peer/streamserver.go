package peer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// The server side of peer streams (stream.go): GET Prefix+"stream" checks
// the secret and the caller like any peer request, switches protocols and
// then reads request frames until the stream closes. Each request is
// served on a goroutine of its own by the Server's routes — the same guard
// (secret, caller, time budget, the bound of requests served at once) and
// handlers as over HTTP — and its answer is queued to the stream's writer.
// At most streamInFlight requests of one stream are served at once; past it
// a request is answered busy at once.
//
// Goroutines: the stream's reader is the HTTP handler's goroutine (it
// returns when the stream closes); the writer and the request goroutines
// are the stream's, and end with it. Server.Close closes every stream.

const streamInFlight = 4096

// serverStream is one client's stream on this server.
type serverStream struct {
	srv    *Server
	mu     sync.Mutex
	conn   net.Conn // set once the connection is taken over
	out    chan outFrame
	ctx    context.Context // ends when the stream closes
	cancel context.CancelFunc
	slots  chan struct{} // requests being served
	wg     sync.WaitGroup
}

// serveStream opens a stream for an authenticated caller.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.admit(w, r); !ok {
		return
	}
	if r.Header.Get("Upgrade") != streamProto {
		WriteError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "a peer stream needs Upgrade: %s", streamProto))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &serverStream{srv: s, out: make(chan outFrame, streamInFlight+16), ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, streamInFlight)}
	if !s.track(st) {
		cancel()
		WriteError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: time.Second,
			Message: "node is shutting down its peer streams"})
		return
	}
	defer s.untrack(st)
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		cancel()
		WriteError(w, http.StatusInternalServerError, slotstore.Wrap(slotstore.CodeInternal, err, "peer stream"))
		return
	}
	st.setConn(conn)
	if st.ctx.Err() != nil { // closed while switching
		conn.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if _, err := brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + streamProto + "\r\n\r\n"); err != nil {
		st.close()
		return
	}
	if err := brw.Flush(); err != nil {
		st.close()
		return
	}
	st.run(brw.Reader, r)
}

// run serves the stream until it closes (read error, dead link, Close).
func (st *serverStream) run(br *bufio.Reader, opened *http.Request) {
	dead := st.srv.streamDead
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		// A client that stops reading holds a batch's writes for as long
		// as the link is given.
		deadline := func() { _ = st.conn.SetWriteDeadline(time.Now().Add(dead)) }
		if err := writeFrames(st.conn, st.out, st.ctx.Done(), nil, deadline); err != nil {
			st.close()
		}
	}()
	defer func() {
		st.close()
		st.wg.Wait()
		<-writerDone
	}()
	// The client pings every pingEvery: silence this long is a dead link.
	// Every read extends the deadline (a large request on a slow link is
	// alive).
	extend := func() { _ = st.conn.SetReadDeadline(time.Now().Add(dead)) }
	extend()
	lr := bufio.NewReaderSize(liveReader{br, extend}, 64<<10)
	for {
		f, err := readFrame(lr, maxRequestFrame)
		if err != nil || st.ctx.Err() != nil {
			return
		}
		switch f.kind {
		case framePing:
			pong, _ := appendFrame(nil, &frame{kind: framePong, id: f.id})
			st.send(pong)
		case frameRequest:
			select {
			case st.slots <- struct{}{}:
			default:
				st.answer(f.id, busyAnswer())
				continue
			}
			st.wg.Add(1)
			go func() {
				defer st.wg.Done()
				defer func() { <-st.slots }()
				st.answer(f.id, st.serve(f, opened))
			}()
		default:
			return // a client sends requests and pings only
		}
	}
}

// send queues an encoded frame (the queue holds every answer a stream can
// owe, so it only waits when the stream is closing).
func (st *serverStream) send(b []byte) {
	select {
	case st.out <- outFrame{b: b}:
	case <-st.ctx.Done():
	}
}

func (st *serverStream) answer(id uint64, rec *streamAnswer) {
	if rec.tooLarge {
		rec = errorAnswer(http.StatusInternalServerError, slotstore.Errorf(slotstore.CodeInternal, "answer over the %d-byte bound of a peer stream", maxAnswerFrame))
	}
	if rec.status == 0 { // a handler that wrote nothing: 200, as over HTTP
		rec.status = http.StatusOK
	}
	b, err := appendFrame(nil, &frame{kind: frameResponse, id: id, status: rec.status, header: rec.header, body: rec.body.Bytes()})
	if err != nil {
		rec = errorAnswer(http.StatusInternalServerError, slotstore.Wrap(slotstore.CodeInternal, err, "answer too large for a peer stream"))
		b, _ = appendFrame(nil, &frame{kind: frameResponse, id: id, status: rec.status, header: rec.header, body: rec.body.Bytes()})
	}
	st.send(b)
}

// serve runs one request frame through the server's routes.
func (st *serverStream) serve(f *frame, opened *http.Request) (rec *streamAnswer) {
	rec = &streamAnswer{header: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			rec = errorAnswer(http.StatusInternalServerError, slotstore.Errorf(slotstore.CodeInternal, "peer request failed: %v", p))
		}
	}()
	u, err := url.ParseRequestURI(f.path)
	if err != nil {
		return errorAnswer(http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "peer stream request path"))
	}
	req := (&http.Request{Method: f.method, URL: u, RequestURI: f.path, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: headerOrEmpty(f.header), Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)),
		Host: opened.Host, RemoteAddr: opened.RemoteAddr, TLS: opened.TLS}).WithContext(st.ctx)
	st.srv.mux.ServeHTTP(rec, req)
	return rec
}

func (st *serverStream) setConn(c net.Conn) {
	st.mu.Lock()
	st.conn = c
	st.mu.Unlock()
}

// close ends the stream: its requests' contexts and its connection.
func (st *serverStream) close() {
	st.cancel()
	st.mu.Lock()
	c := st.conn
	st.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// streamAnswer records what a handler answers (an http.ResponseWriter).
type streamAnswer struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	tooLarge bool // the handler wrote past the bound of an answer frame
}

func (a *streamAnswer) Header() http.Header { return a.header }

func (a *streamAnswer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *streamAnswer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.body.Len()+len(b) > maxAnswerFrame-64<<10 {
		a.tooLarge = true
		return 0, errors.New("peer stream: answer too large")
	}
	return a.body.Write(b)
}

func errorAnswer(status int, err error) *streamAnswer {
	a := &streamAnswer{header: http.Header{}}
	WriteError(a, status, err)
	return a
}

func busyAnswer() *streamAnswer {
	return errorAnswer(http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: 100 * time.Millisecond,
		Message: fmt.Sprintf("%d requests of this peer stream already being served", streamInFlight)})
}

// track registers a stream about to open (false once the server is
// closed); untrack once it has ended, its requests answered.
func (s *Server) track(st *serverStream) bool {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	if s.streamsClosed {
		return false
	}
	if s.streams == nil {
		s.streams = map[*serverStream]struct{}{}
	}
	s.streams[st] = struct{}{}
	s.streamRuns.Add(1)
	return true
}

func (s *Server) untrack(st *serverStream) {
	s.streamsMu.Lock()
	delete(s.streams, st)
	s.streamsMu.Unlock()
	s.streamRuns.Done()
}

// Close closes every open stream, refuses new ones and waits (at most
// closeWait) until the requests they were serving have returned: an
// http.Server's Shutdown sees none of it (the connections switched
// protocols), and the node closes what those requests use right after.
func (s *Server) Close() {
	s.streamsMu.Lock()
	s.streamsClosed = true
	open := make([]*serverStream, 0, len(s.streams))
	for st := range s.streams {
		open = append(open, st)
	}
	s.streamsMu.Unlock()
	for _, st := range open {
		st.close()
	}
	done := make(chan struct{})
	go func() {
		s.streamRuns.Wait()
		close(done)
	}()
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// closeWait bounds how long Close waits for the streams' requests (each
// has its own deadline besides, at most the caller's budget).
const closeWait = 5 * time.Second
