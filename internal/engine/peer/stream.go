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
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Peer streams: the hot peer requests — forwarded writes (propose,
// propose-batch), forwarded reads (read) and read-index questions
// (readindex) — travel as frames (frame.go) over one long-lived connection
// per peer instead of one HTTP/1.1 exchange each. A request is a frame
// queued to the connection's writer, which writes whatever is queued in one
// batch; the answer is a frame the reader hands to its waiter by id. On the
// same machine this costs about a quarter of the CPU of an HTTP exchange
// (bench/README.md), which is what a node pays for every request that does
// not land on the node that serves it.
//
// The stream is opened by an HTTP request on the peer listener (GET
// Prefix+"stream", Upgrade: slotmeta-peer/1), so it has the listener's TLS,
// and the server checks the cluster secret and the caller's node before it
// switches protocols. Every request on it still carries its own headers —
// the secret, the caller's node, its time budget — and is served by the same
// handlers as over HTTP (streamserver.go); only the wire differs. A peer
// that does not know streams (404) is called over HTTP for a while.
//
// streamTransport is an http.RoundTripper: the Client's HTTP client sends
// every request through it (and tests wrap it with fault injection as
// before), so a call's answer and its "sent" are what they are over HTTP. A
// request whose frame was never written (the stream failed first, or could
// not be opened) fails as a dial error: not sent.
//
// Liveness: the client pings every pingEvery; the server answers each. A
// side that receives nothing for deadAfter closes the stream — a link that
// drops packets gives no error, and every request on a dead stream would
// otherwise wait out its deadline — and the next request opens a new one.
//
// Goroutines: each open stream has a reader and a writer, owned by the
// stream and ended by its close; opening a stream runs on one goroutine per
// peer at a time, bounded by openTimeout. Close ends them all.

const (
	streamProto = "slotmeta-peer/1"
	openTimeout = 2 * time.Second
	noStreamFor = time.Minute // a peer that answered 404 is called over HTTP this long
	refusedFor  = time.Second // a peer that refused to open one (secret, caller) likewise
	writeBatch  = 1 << 20     // bytes written in one flush at most
	// Liveness (tests set theirs on the client and server).
	pingEvery  = time.Second
	deadAfter  = 5 * time.Second
	streamIdle = 2 * time.Minute // a stream no request used this long is closed
)

// streamed says whether a request to path travels on the peer's stream.
func streamed(path string) bool {
	switch path {
	case Prefix + "propose", Prefix + "propose-batch", Prefix + "read", Prefix + "readindex":
		return true
	}
	return false
}

var (
	errStreamClosed = errors.New("peer stream closed")
	errStreamDead   = errors.New("peer stream: nothing received for too long")
	errNoStream     = errors.New("peer does not serve streams")
	errRefused      = errors.New("peer refused to open a stream")
)

// notSent wraps err as the dial error Client.call reads as "never reached
// the peer". The cause is kept as text only: a deadline of the stream's own
// opening, say, is not the caller's.
func notSent(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New(err.Error())}
}

// notSentCtx is notSent for the caller's own context ending: that cause is
// kept (a deadline is a timeout).
func notSentCtx(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

// streamLost is the error of a request that may have reached the peer when
// its stream failed. It does not unwrap to the connection's error: a TLS
// alert on an established stream must not read as a refused handshake,
// which Client.call takes for "not sent".
type streamLost struct{ msg string }

func (e streamLost) Error() string { return "peer stream lost: " + e.msg }

// outFrame is an encoded frame waiting for its connection's writer.
type outFrame struct {
	b     []byte
	state *atomic.Int32 // a request's frameQueued → frameWritten or frameDropped (nil: not a request)
}

// A request frame is written only if the writer claims it before its
// waiter gives up on it: so a request answered "not sent" never leaves.
const (
	frameQueued int32 = iota
	frameWritten
	frameDropped
)

// claim reports whether the writer may write f.
func (f outFrame) claim() bool {
	return f.state == nil || f.state.CompareAndSwap(frameQueued, frameWritten)
}

// writeFrames writes what q holds to w, in batches of everything queued,
// until done is closed or a write fails (returned). ping, when not nil,
// also writes a ping frame whenever it delivers. deadline, when not nil,
// bounds each batch's writes (a peer that stops reading).
func writeFrames(w io.Writer, q <-chan outFrame, done <-chan struct{}, ping <-chan time.Time, deadline func()) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	pingFrame, _ := appendFrame(nil, &frame{kind: framePing})
	for {
		var f outFrame
		select {
		case <-done:
			return nil
		case <-ping:
			f.b = pingFrame
		case f = <-q:
		}
		if deadline != nil {
			deadline()
		}
		n, yielded := 0, false
		for {
			if f.claim() {
				if _, err := bw.Write(f.b); err != nil {
					return err
				}
				n += len(f.b)
			}
			if n >= writeBatch {
				break
			}
			select {
			case f = <-q:
				continue
			default:
			}
			if !yielded {
				// Let the goroutines that are about to queue a frame do so
				// before the flush: a write per frame is most of what a
				// stream costs when callers are many and each sends one.
				yielded = true
				runtime.Gosched()
				select {
				case f = <-q:
					continue
				default:
				}
			}
			break
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
}

// streamTransport sends the streamed requests over per-peer streams and
// every other request (and the opening of a stream) through base.
type streamTransport struct {
	base   http.RoundTripper
	bound  int // requests in flight per stream (the Client's per-peer bound)
	ping   time.Duration
	dead   time.Duration
	mu     sync.Mutex
	peers  map[string]*streamPeer // by host:port
	closed bool
}

// streamPeer is one peer's stream, or the opening of one, or a note that
// the peer does not serve streams.
type streamPeer struct {
	s        *clientStream
	opening  chan struct{} // closed when the current opening ends
	openErr  error         // how the last opening ended
	httpTill time.Time     // call over HTTP until then (errNoStream)
}

func newStreamTransport(base http.RoundTripper, bound int) *streamTransport {
	return &streamTransport{base: base, bound: bound, ping: pingEvery, dead: deadAfter, peers: map[string]*streamPeer{}}
}

// RoundTrip implements http.RoundTripper.
func (t *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !streamed(req.URL.Path) {
		return t.base.RoundTrip(req)
	}
	s, err := t.stream(req)
	if errors.Is(err, errNoStream) || errors.Is(err, errRefused) {
		// Over HTTP the peer answers the request itself: a refusal of
		// the secret or the caller then says why, as any peer answer.
		return t.base.RoundTrip(req)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return nil, notSentCtx(ctxErr)
		}
		return nil, notSent(err)
	}
	return s.roundTrip(req)
}

// stream returns the open stream to req's host, opening one if there is
// none (waiting for it within req's context).
func (t *streamTransport) stream(req *http.Request) (*clientStream, error) {
	host := req.URL.Host
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errNoStream // a closed client calls over HTTP
	}
	p := t.peers[host]
	if p == nil {
		p = &streamPeer{}
		t.peers[host] = p
	}
	switch {
	case p.s != nil && !p.s.dead():
		s := p.s
		t.mu.Unlock()
		return s, nil
	case time.Now().Before(p.httpTill):
		t.mu.Unlock()
		return nil, errNoStream
	case p.opening == nil:
		p.s, p.opening = nil, make(chan struct{})
		go t.open(p, p.opening, openAs{scheme: req.URL.Scheme, host: host,
			secret: req.Header.Get(hdrSecret), from: req.Header.Get(hdrFrom)})
	}
	opening := p.opening
	t.mu.Unlock()
	select {
	case <-opening:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	t.mu.Lock()
	s, err := p.s, p.openErr
	t.mu.Unlock()
	switch {
	case s != nil && !s.dead():
		return s, nil
	case err != nil:
		return nil, err
	default:
		// Opened and closed at once (the peer shutting down): no second
		// try here, lest a closing peer be opened again and again.
		return nil, errStreamClosed
	}
}

// openAs is what opening a stream takes from the request that asked for it.
type openAs struct{ scheme, host, secret, from string }

// open opens a stream as a says, within openTimeout whatever the asking
// request's deadline, and publishes the outcome in p.
func (t *streamTransport) open(p *streamPeer, done chan struct{}, a openAs) {
	s, err := t.dial(a)
	if err != nil {
		err = fmt.Errorf("peer stream: open: %w", err)
	}
	t.mu.Lock()
	closed := t.closed
	if !closed {
		p.s = s
	}
	p.opening, p.openErr = nil, err
	switch {
	case errors.Is(err, errNoStream):
		p.httpTill = time.Now().Add(noStreamFor)
	case errors.Is(err, errRefused):
		p.httpTill = time.Now().Add(refusedFor)
	}
	if err == nil && closed {
		p.openErr = errNoStream
	}
	t.mu.Unlock()
	close(done)
	if err == nil && closed {
		s.close(errStreamClosed)
	}
}

func (t *streamTransport) dial(a openAs) (*clientStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.scheme+"://"+a.host+Prefix+"stream", nil)
	if err != nil {
		return nil, err
	}
	if a.secret != "" {
		req.Header.Set(hdrSecret, a.secret)
	}
	if a.from != "" {
		req.Header.Set(hdrFrom, a.from)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", streamProto)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		resp.Body.Close()
		return nil, errNoStream
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered %d", errRefused, a.host, resp.StatusCode)
	}
	if resp.Header.Get("Upgrade") != streamProto {
		resp.Body.Close()
		return nil, fmt.Errorf("peer stream: %s switched to %q", a.host, resp.Header.Get("Upgrade"))
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("peer stream: the switched connection is not writable")
	}
	return startClientStream(conn, t.bound, t.ping, t.dead, streamIdle), nil
}

// close closes every stream; later requests go over HTTP.
func (t *streamTransport) close() {
	t.mu.Lock()
	t.closed = true
	var open []*clientStream
	for _, p := range t.peers {
		if p.s != nil {
			open = append(open, p.s)
		}
	}
	t.mu.Unlock()
	for _, s := range open {
		s.close(errStreamClosed)
	}
}

// clientStream is one open stream: requests out, answers in.
type clientStream struct {
	conn    io.ReadWriteCloser
	ping    time.Duration // how often it pings
	silent  time.Duration // silence after which it gives up
	idle    time.Duration // no request for this long: it closes
	out     chan outFrame
	done    chan struct{}
	base    time.Time    // the monotonic origin of lastRx and lastUse
	lastRx  atomic.Int64 // since base: the last bytes received
	lastUse atomic.Int64 // since base: the last request sent
	mu      sync.Mutex
	next    uint64
	waits   map[uint64]*streamWait
	err     error
}

// streamWait is one request waiting for its answer.
type streamWait struct {
	state  atomic.Int32 // frameQueued, frameWritten, frameDropped
	answer chan *frame  // buffered(1)
}

// sent reports whether the request's frame may have left: false only when
// it was dropped before the writer claimed it (and then it never will be).
func (w *streamWait) sent() bool {
	return !w.state.CompareAndSwap(frameQueued, frameDropped) && w.state.Load() == frameWritten
}

func startClientStream(conn io.ReadWriteCloser, bound int, ping, dead, idle time.Duration) *clientStream {
	s := &clientStream{conn: conn, ping: ping, silent: dead, idle: idle, out: make(chan outFrame, bound+4),
		done: make(chan struct{}), base: time.Now(), waits: map[uint64]*streamWait{}}
	go s.readLoop()
	go s.writeLoop()
	return s
}

func (s *clientStream) now() int64 { return int64(time.Since(s.base)) }

func (s *clientStream) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close ends the stream once: every waiting request fails (not sent if its
// frame was never written: the writer claims a frame before it writes it,
// a waiter that gives up drops it first), the connection closes, the
// goroutines end.
func (s *clientStream) close(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	waits := s.waits
	s.waits = nil
	close(s.done)
	s.mu.Unlock()
	for _, w := range waits {
		w.answer <- nil
	}
	_ = s.conn.Close()
}

func (s *clientStream) writeLoop() {
	tick := time.NewTicker(s.ping)
	defer tick.Stop()
	ping := make(chan time.Time, 1)
	go func() { // the liveness check rides on the ping ticks
		for {
			select {
			case <-s.done:
				return
			case now := <-tick.C:
				// Checked whatever the writer does: a writer stuck on a
				// peer that stopped reading must not stop the check, which
				// closes the connection and so frees it.
				if s.now()-s.lastRx.Load() > int64(s.silent) {
					s.close(errStreamDead)
					return
				}
				s.mu.Lock()
				waiting := len(s.waits)
				s.mu.Unlock()
				if waiting == 0 && s.now()-s.lastUse.Load() > int64(s.idle) {
					s.close(errStreamClosed)
					return
				}
				select {
				case ping <- now:
				default: // a ping is still queued
				}
			}
		}
	}()
	if err := writeFrames(s.conn, s.out, s.done, ping, nil); err != nil {
		s.close(err)
	}
}

func (s *clientStream) readLoop() {
	// Every read counts as a sign of life, not only whole frames: a large
	// answer on a slow link is not a dead one.
	r := bufio.NewReaderSize(liveReader{s.conn, func() { s.lastRx.Store(s.now()) }}, 64<<10)
	for {
		f, err := readFrame(r, maxAnswerFrame)
		if err != nil {
			s.close(err)
			return
		}
		if f.kind != frameResponse {
			continue // pong
		}
		s.mu.Lock()
		w := s.waits[f.id]
		delete(s.waits, f.id)
		s.mu.Unlock()
		if w != nil {
			w.answer <- f
		}
	}
}

// roundTrip sends req as a frame and waits for its answer.
func (s *clientStream) roundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, notSent(err)
		}
	}
	w := &streamWait{answer: make(chan *frame, 1)}
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, notSent(s.err)
	}
	s.next++
	id := s.next
	s.waits[id] = w
	s.mu.Unlock()
	s.lastUse.Store(s.now())
	b, err := appendFrame(nil, &frame{kind: frameRequest, id: id, method: req.Method, path: req.URL.RequestURI(), header: req.Header, body: body})
	if err != nil {
		s.forget(id)
		return nil, notSent(err)
	}
	ctx := req.Context()
	select {
	case s.out <- outFrame{b: b, state: &w.state}:
	case <-s.done:
		s.forget(id)
		return nil, notSent(errStreamClosed)
	case <-ctx.Done():
		s.forget(id)
		return nil, notSentCtx(ctx.Err())
	}
	select {
	case f := <-w.answer:
		if f == nil {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			if !w.sent() {
				return nil, notSent(err)
			}
			return nil, streamLost{err.Error()}
		}
		return &http.Response{Status: fmt.Sprintf("%d %s", f.status, http.StatusText(f.status)), StatusCode: f.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: headerOrEmpty(f.header), Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: req}, nil
	case <-ctx.Done():
		s.forget(id)
		if !w.sent() {
			return nil, notSentCtx(ctx.Err())
		}
		return nil, ctx.Err()
	}
}

func (s *clientStream) forget(id uint64) {
	s.mu.Lock()
	delete(s.waits, id)
	s.mu.Unlock()
}

func headerOrEmpty(h http.Header) http.Header {
	if h == nil {
		return http.Header{}
	}
	return h
}

// liveReader notes every successful read.
type liveReader struct {
	r     io.Reader
	touch func()
}

func (l liveReader) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	if n > 0 {
		l.touch()
	}
	return n, err
}
