package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// conns is one worker's HTTP/1.1 keep-alive connections, one per endpoint,
// used synchronously: the worker writes a request and reads its answer on
// its own goroutine, like wrk or bombardier do.
//
// Why not net/http's Transport: it runs a read and a write goroutine per
// connection and hands every request and answer across channels between
// them and the caller. On this 2-core machine the load generator shares the
// cores with the servers it measures, and those hand-offs cost about as
// much CPU as a linearizable read costs a slotmeta server, so the client
// itself capped the measured throughput (of either system). The answer is
// still parsed by net/http (http.ReadResponse); only the request line and
// its few headers are written here.
//
// A conns belongs to one goroutine; close may be called from another (to
// stop a run early), which fails the request in flight.
type conns struct {
	timeout time.Duration
	token   string
	dialer  *net.Dialer

	mu     sync.Mutex // guards byEP and closed against close
	byEP   map[string]*conn
	closed bool
	req    []byte // the request being written, reused
}

type conn struct {
	nc net.Conn
	br *bufio.Reader
}

func newConns(timeout time.Duration, token string, namespaces bool) *conns {
	return &conns{timeout: timeout, token: token, byEP: map[string]*conn{}, dialer: hostDialer(timeout, namespaces)}
}

// localIP reports whether slotbench may load ip: loopback, or with
// namespaces an address of 10.0.0.0/8 (the network-namespace hosts a test
// made on this machine).
func localIP(ip net.IP, namespaces bool) bool {
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	v4 := ip.To4()
	return namespaces && v4 != nil && v4[0] == 10
}

// loopbackDialer only connects to loopback addresses: slotbench loads this
// machine and nothing else.
func loopbackDialer(timeout time.Duration) *net.Dialer { return hostDialer(timeout, false) }

// hostDialer only connects to the addresses localIP allows.
func hostDialer(timeout time.Duration, namespaces bool) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if !localIP(net.ParseIP(host), namespaces) {
				return fmt.Errorf("refusing to dial %s: not loopback", address)
			}
			return nil
		},
	}
}

// errClosed: the run was stopped while a request was out.
var errClosed = errors.New("slotbench: connections closed")

// roundTrip sends c and reads the answer's body (at most 1 MiB) into body.
// A failed exchange closes its connection; the next request dials again.
func (cs *conns) roundTrip(ctx context.Context, c call, body *bytes.Buffer) (status int, err error) {
	cn, err := cs.get(ctx, c.host)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(cs.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := cn.nc.SetDeadline(deadline); err != nil {
		cs.drop(c.host, cn)
		return 0, err
	}
	cs.req = appendRequest(cs.req[:0], c, cs.token)
	if _, err := cn.nc.Write(cs.req); err != nil {
		cs.drop(c.host, cn)
		return 0, err
	}
	resp, err := http.ReadResponse(cn.br, nil)
	if err != nil {
		cs.drop(c.host, cn)
		return 0, err
	}
	body.Reset()
	_, err = body.ReadFrom(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		// Keep the connection only if the body was read to its end.
		var one [1]byte
		if n, _ := resp.Body.Read(one[:]); n > 0 {
			err = errors.New("answer larger than 1 MiB")
		}
	}
	resp.Body.Close()
	if err != nil || resp.Close {
		cs.drop(c.host, cn)
	}
	if err != nil {
		return 0, fmt.Errorf("reading the answer: %w", err)
	}
	return resp.StatusCode, nil
}

// appendRequest writes c as an HTTP/1.1 request.
func appendRequest(b []byte, c call, token string) []byte {
	b = append(b, c.method...)
	b = append(b, ' ')
	b = append(b, c.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nUser-Agent: slotbench\r\n"...)
	if token != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, token...)
		b = append(b, "\r\n"...)
	}
	if c.idem != "" {
		b = append(b, "Idempotency-Key: "...)
		b = append(b, c.idem...)
		b = append(b, "\r\n"...)
	}
	if c.body != nil {
		b = append(b, "Content-Type: application/json\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(c.body)), 10)
		b = append(b, "\r\n\r\n"...)
		return append(b, c.body...)
	}
	return append(b, "\r\n"...)
}

// get returns the open connection to host, dialing one if there is none.
func (cs *conns) get(ctx context.Context, host string) (*conn, error) {
	cs.mu.Lock()
	cn, closed := cs.byEP[host], cs.closed
	cs.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if cn != nil {
		return cn, nil
	}
	nc, err := cs.dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	cn = &conn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		nc.Close()
		return nil, errClosed
	}
	cs.byEP[host] = cn
	return cn, nil
}

func (cs *conns) drop(host string, cn *conn) {
	cn.nc.Close()
	cs.mu.Lock()
	if cs.byEP[host] == cn {
		delete(cs.byEP, host)
	}
	cs.mu.Unlock()
}

// close closes every connection; requests after it fail with errClosed.
func (cs *conns) close() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closed = true
	for h, cn := range cs.byEP {
		cn.nc.Close()
		delete(cs.byEP, h)
	}
}
