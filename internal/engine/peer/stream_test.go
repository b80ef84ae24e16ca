package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// testPeer serves a peer.Server with an echoing "propose" (streamed) and
// "leaders" (not streamed) over a real listener; it counts the streams the
// server opened and the HTTP exchanges of each path.
type testPeer struct {
	srv   *Server
	ts    *httptest.Server
	addr  string
	http  sync.Map // path → *atomic.Int64, exchanges that arrived over HTTP
	block chan struct{}
}

func newTestPeer(t *testing.T, secret string) *testPeer {
	t.Helper()
	// The server takes at least what one client may have in flight to it
	// (a node's takes 4× a client's bound): with 64, the 200 calls of
	// TestStreamCarriesTheHotRequests from a client bounded at 256 were
	// answered busy whenever more than 64 were served at once (CI, -race).
	p := &testPeer{srv: NewServer(NewSecret(secret), 4*256), block: make(chan struct{})}
	close(p.block)
	p.srv.Handle(http.MethodPost, "propose", func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == "block" {
			select {
			case <-p.block:
			case <-ctx.Done():
			}
		}
		if strings.HasPrefix(string(body), "fail") {
			WriteError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeNotLeader, Message: "elsewhere", LeaderHint: 3})
			return
		}
		w.Header().Set("X-Echo-Group", r.Header.Get(HdrGroup))
		_, _ = w.Write(append([]byte("echo:"), body...))
	})
	p.srv.Handle(http.MethodGet, "leaders", func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, []LeaderView{{Group: 1, Leader: 2, Term: 3}})
	})
	p.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := p.http.LoadOrStore(r.URL.Path, &atomic.Int64{})
		v.(*atomic.Int64).Add(1)
		p.srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.srv.Close()
		p.ts.Close()
	})
	p.addr = strings.TrimPrefix(p.ts.URL, "http://")
	return p
}

func (p *testPeer) exchanges(path string) int64 {
	v, ok := p.http.Load(Prefix + path)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (p *testPeer) openStreams() int {
	p.srv.streamsMu.Lock()
	defer p.srv.streamsMu.Unlock()
	return len(p.srv.streams)
}

func call(t *testing.T, c *Client, addr, body string) (string, http.Header, bool, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, sent, err := c.Call(ctx, http.MethodPost, addr, "propose", []byte(body), map[string]string{HdrGroup: "7"})
	if err != nil {
		return "", nil, sent, err
	}
	b, err := ReadBody(resp)
	return string(b), resp.Header, sent, err
}

// TestStreamCarriesTheHotRequests: forwarded requests travel on one stream
// per peer (many at once, each answered on its own, headers and errors as
// over HTTP); other requests stay HTTP exchanges.
func TestStreamCarriesTheHotRequests(t *testing.T) {
	p := newTestPeer(t, "s")
	c := NewClient(NewSecret("s"), 256)
	defer c.Close()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, hdr, sent, err := call(t, c, p.addr, fmt.Sprint("cmd-", i))
			if err != nil || !sent || body != fmt.Sprint("echo:cmd-", i) || hdr.Get("X-Echo-Group") != "7" {
				t.Errorf("call %d: %q %v %v %v", i, body, hdr, sent, err)
			}
		}()
	}
	wg.Wait()
	_, _, sent, err := call(t, c, p.addr, "fail")
	var se *slotstore.Error
	if !errors.As(err, &se) || se.Code != slotstore.CodeNotLeader || se.LeaderHint != 3 || !sent {
		t.Fatalf("an error answer over the stream: %v (sent %v)", err, sent)
	}
	if views, err := c.Leaders(context.Background(), p.addr); err == nil {
		t.Fatalf("a call without a deadline went out: %v", views)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if views, err := c.Leaders(ctx, p.addr); err != nil || len(views) != 1 || views[0].Term != 3 {
		t.Fatalf("leaders: %v %v", views, err)
	}
	if n := p.exchanges("propose"); n != 0 {
		t.Fatalf("%d proposals arrived as HTTP exchanges", n)
	}
	if p.exchanges("stream") != 1 || p.openStreams() != 1 || p.exchanges("leaders") != 1 {
		t.Fatalf("stream openings %d (open %d), leaders exchanges %d", p.exchanges("stream"), p.openStreams(), p.exchanges("leaders"))
	}
}

// TestStreamRefusalsAreThePeersAnswer: a stream the peer will not open —
// wrong secret (a rotation in progress), a removed caller, a peer without
// streams — sends the request over HTTP, whose answer says why; with the
// earlier secret the call goes through.
func TestStreamRefusalsAreThePeersAnswer(t *testing.T) {
	p := newTestPeer(t, "old")
	secret := NewSecret("old")
	secret.Set("new", time.Minute)
	c := NewClient(secret, 8)
	defer c.Close()
	if body, _, _, err := call(t, c, p.addr, "x"); err != nil || body != "echo:x" {
		t.Fatalf("with the new secret refused, the old one: %q %v", body, err)
	}
	p.srv.RefuseFrom(func(slotstore.NodeID) bool { return true })
	c2 := NewClient(NewSecret("old"), 8)
	defer c2.Close()
	c2.From(9)
	if _, _, _, err := call(t, c2, p.addr, "x"); slotstore.ErrorCode(err) != slotstore.CodePermissionDenied {
		t.Fatalf("a removed caller: %v", err)
	}

	// A peer without streams (an older node): HTTP, and no new opening
	// for a while.
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Prefix+"stream" {
			http.NotFound(w, r)
			return
		}
		p.srv.ServeHTTP(w, r)
	}))
	defer old.Close()
	oldAddr := strings.TrimPrefix(old.URL, "http://")
	c3 := NewClient(NewSecret("old"), 8)
	defer c3.Close()
	for range 3 {
		if body, _, _, err := call(t, c3, oldAddr, "y"); err != nil || body != "echo:y" {
			t.Fatalf("a peer without streams: %q %v", body, err)
		}
	}
}

// TestStreamSentIsExact: a request whose frame was written and whose stream
// then closed may have reached the peer (sent); one the stream never wrote
// did not (a dial error: not sent) — the rule a forwarded write's retry
// rests on.
func TestStreamSentIsExact(t *testing.T) {
	p := newTestPeer(t, "s")
	p.block = make(chan struct{})
	c := NewClient(NewSecret("s"), 8)
	defer c.Close()
	if _, _, _, err := call(t, c, p.addr, "warm"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var sentFlag atomic.Bool
	go func() {
		_, _, sent, err := call(t, c, p.addr, "block")
		sentFlag.Store(sent)
		done <- err
	}()
	waitFor(t, "the blocked request served", func() bool {
		p.srv.streamsMu.Lock()
		defer p.srv.streamsMu.Unlock()
		for st := range p.srv.streams {
			if len(st.slots) == 1 {
				return true
			}
		}
		return false
	})
	p.srv.Close() // the stream closes under the written request
	if err := <-done; err == nil || !sentFlag.Load() {
		t.Fatalf("a written request on a closed stream: %v, sent %v", err, sentFlag.Load())
	}
	close(p.block)

	// Nothing listens any more: the request is never written.
	p.ts.Close()
	if _, _, sent, err := call(t, c, p.addr, "gone"); err == nil || sent {
		t.Fatalf("a request to a peer that is gone: %v, sent %v", err, sent)
	}
}

// TestStreamNoticesADeadLink: a peer that opened the stream and then says
// nothing (a link that drops every packet gives no error) is given up after
// deadAfter: the request on it fails as sent, and the next one opens a new
// stream.
func TestStreamNoticesADeadLink(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var opened atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			opened.Add(1)
			go func() { // switch protocols, then read everything and answer nothing
				defer conn.Close()
				br := bufio.NewReader(conn)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+streamProto+"\r\n\r\n")
				_, _ = io.Copy(io.Discard, br)
			}()
		}
	}()
	c := NewClient(NewSecret("s"), 8)
	defer c.Close()
	c.stream.ping, c.stream.dead = 20*time.Millisecond, 150*time.Millisecond
	start := time.Now()
	if _, _, sent, err := call(t, c, ln.Addr().String(), "lost"); err == nil || !sent {
		t.Fatalf("a request on a dead stream: %v, sent %v", err, sent)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the dead stream was noticed after %v (given up after %v)", took, c.stream.dead)
	}
	_, _, _, _ = call(t, c, ln.Addr().String(), "again")
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d streams opened, want a new one after the dead one", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.WaitUntil(t, 5*time.Second, 5*time.Millisecond, what, cond)
}

// TestStreamGivesUpOnAPeerThatStopsReading: a peer that reads nothing
// more (its buffers full: here a pipe nobody reads, so the writer is stuck
// in its first write) is still given up after the silence — the stuck
// writer does not hold the liveness check, which closes the connection
// and so frees the writer.
func TestStreamGivesUpOnAPeerThatStopsReading(t *testing.T) {
	ours, peer := net.Pipe()
	defer peer.Close()
	s := startClientStream(ours, 8, 20*time.Millisecond, 200*time.Millisecond, time.Hour)
	defer s.close(errStreamClosed)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://peer"+Prefix+"propose", strings.NewReader("x"))
	start := time.Now()
	// The writer is stuck in the request's write (or a ping's before it):
	// either way the stream must be given up on the silence alone.
	if _, err := s.roundTrip(req); err == nil {
		t.Fatal("a request on a stuck stream was answered")
	}
	if took := time.Since(start); took > 2*time.Second || ctx.Err() != nil {
		t.Fatalf("the stuck stream was given up after %v", took)
	}
}

// TestStreamNeverWritesADroppedRequest: a request still queued behind
// another when its caller gives up is answered not sent, and its frame is
// never written afterwards (the writer claims a frame before it writes it);
// the frame being written when the stream closes counts as sent.
func TestStreamNeverWritesADroppedRequest(t *testing.T) {
	ours, peer := net.Pipe() // unbuffered: the first frame's write waits for the peer to read
	s := startClientStream(ours, 8, time.Hour, time.Hour, time.Hour)
	defer s.close(errStreamClosed)
	send := func(ctx context.Context, body string) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://peer"+Prefix+"propose", strings.NewReader(body))
		_, err := s.roundTrip(req)
		var op *net.OpError
		return !(errors.As(err, &op) && op.Op == "dial"), err
	}
	// Larger than the writer's buffer: the writer is in the pipe's write,
	// blocked until the peer reads, from the moment it claims the frame.
	firstBody := strings.Repeat("f", 1<<20)
	first := make(chan error, 1)
	go func() {
		_, err := send(context.Background(), firstBody)
		first <- err
	}()
	waitFor(t, "the first frame claimed by the writer", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, w := range s.waits {
			if w.state.Load() == frameWritten {
				return true
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if sent, err := send(ctx, "second"); err == nil || sent {
		t.Fatalf("a request dropped before its write: %v (sent %v)", err, sent)
	}
	go func() { // the peer reads at last; then the stream closes
		// A hold, not a wait: the window in which a writer that wrongly
		// wrote the dropped frame would have written it too.
		time.Sleep(50 * time.Millisecond)
		s.close(errStreamClosed)
	}()
	r := bufio.NewReader(peer)
	var got []string
	for {
		f, err := readFrame(r, maxRequestFrame)
		if err != nil {
			break
		}
		got = append(got, string(f.body))
	}
	if len(got) != 1 || got[0] != firstBody {
		t.Fatalf("%d frames written, want only the first", len(got))
	}
	if err := <-first; err == nil {
		t.Fatal("the first request was answered by nobody")
	}
}
