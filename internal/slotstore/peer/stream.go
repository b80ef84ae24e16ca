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
	pingEvery = time.Second
	deadAfter = 5 * time.Second
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
// the peer".
func notSent(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }

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
// also writes a ping frame at every tick.
func writeFrames(w io.Writer, q <-chan outFrame, done <-chan struct{}, ping <-chan time.Time) error {
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
		return nil, notSent(err)
	}
	return s.roundTrip(req)
}

// stream returns the open stream to req's host, opening one if there is
// none (waiting for it within req's context).
func (t *streamTransport) stream(req *http.Request) (*clientStream, error) {
	host := req.URL.Host
	for {
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
			go t.open(host, p, p.opening, req)
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
		if s != nil && !s.dead() {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// open opens a stream to host like req (its scheme, secret and caller),
// within openTimeout whatever req's deadline, and publishes the outcome in p.
func (t *streamTransport) open(host string, p *streamPeer, done chan struct{}, like *http.Request) {
	s, err := t.dial(like)
	t.mu.Lock()
	defer t.mu.Unlock()
	defer close(done)
	p.opening, p.openErr = nil, err
	switch {
	case errors.Is(err, errNoStream):
		p.httpTill = time.Now().Add(noStreamFor)
	case errors.Is(err, errRefused):
		p.httpTill = time.Now().Add(refusedFor)
	}
	if err != nil {
		return
	}
	if t.closed {
		s.close(errStreamClosed)
		p.openErr = errNoStream
		return
	}
	p.s = s
}

func (t *streamTransport) dial(like *http.Request) (*clientStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, like.URL.Scheme+"://"+like.URL.Host+Prefix+"stream", nil)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{hdrSecret, hdrFrom} {
		if v := like.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
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
		return nil, fmt.Errorf("%w: %s answered %d", errRefused, like.URL.Host, resp.StatusCode)
	}
	conn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		resp.Body.Close()
		return nil, errors.New("peer stream: the switched connection is not writable")
	}
	return startClientStream(conn, t.bound, t.ping, t.dead), nil
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
	conn   io.ReadWriteCloser
	ping   time.Duration // how often it pings
	silent time.Duration // silence after which it gives up
	out    chan outFrame
	done   chan struct{}
	lastRx atomic.Int64 // unix nanoseconds of the last frame received
	mu     sync.Mutex
	next   uint64
	waits  map[uint64]*streamWait
	err    error
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

func startClientStream(conn io.ReadWriteCloser, bound int, ping, dead time.Duration) *clientStream {
	s := &clientStream{conn: conn, ping: ping, silent: dead, out: make(chan outFrame, bound+4), done: make(chan struct{}), waits: map[uint64]*streamWait{}}
	s.lastRx.Store(time.Now().UnixNano())
	go s.readLoop()
	go s.writeLoop()
	return s
}

func (s *clientStream) dead() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// close ends the stream once: every waiting request fails (not sent if its
// frame was never written), the connection closes, the goroutines end.
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
	_ = s.conn.Close()
	for _, w := range waits {
		w.answer <- nil
	}
}

func (s *clientStream) writeLoop() {
	tick := time.NewTicker(s.ping)
	defer tick.Stop()
	ping := make(chan time.Time)
	go func() { // the liveness check rides on the ping ticks
		for {
			select {
			case <-s.done:
				return
			case now := <-tick.C:
				if now.UnixNano()-s.lastRx.Load() > int64(s.silent) {
					s.close(errStreamDead)
					return
				}
				select {
				case ping <- now:
				case <-s.done:
					return
				}
			}
		}
	}()
	if err := writeFrames(s.conn, s.out, s.done, ping); err != nil {
		s.close(err)
	}
}

func (s *clientStream) readLoop() {
	r := bufio.NewReaderSize(s.conn, 64<<10)
	for {
		f, err := readFrame(r)
		if err != nil {
			s.close(err)
			return
		}
		s.lastRx.Store(time.Now().UnixNano())
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
		return nil, notSent(ctx.Err())
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
			return nil, fmt.Errorf("peer stream: %w", err)
		}
		return &http.Response{Status: http.StatusText(f.status), StatusCode: f.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: headerOrEmpty(f.header), Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: req}, nil
	case <-ctx.Done():
		s.forget(id)
		if !w.sent() {
			return nil, notSent(ctx.Err())
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
