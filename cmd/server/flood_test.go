package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// flood holds connections to addrs from several loopback sources, half of
// them idle and half sending a header line now and then (a slow client),
// until stop.
type flood struct {
	mu     sync.Mutex
	conns  []net.Conn
	opened int
	failed int
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startFlood(t *testing.T, addrs []string, perAddr int) *flood {
	f := &flood{stop: make(chan struct{})}
	for _, addr := range addrs {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for i := range perAddr {
				select {
				case <-f.stop:
					return
				default:
				}
				// 127.0.0.2–9: sources other than the nodes' own 127.0.0.1.
				d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%8))}}
				c, err := d.Dial("tcp", addr)
				f.mu.Lock()
				if err != nil {
					f.failed++
					f.mu.Unlock()
					continue
				}
				f.opened++
				f.conns = append(f.conns, c)
				f.mu.Unlock()
				if i%2 == 1 {
					f.wg.Add(1)
					go f.slow(c)
				}
			}
		}()
	}
	return f
}

// slow writes a request line, then a header line every 500 ms.
func (f *flood) slow(c net.Conn) {
	defer f.wg.Done()
	_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil {
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			if _, err := io.WriteString(c, "X-Slow: 1\r\n"); err != nil {
				return
			}
		}
	}
}

func (f *flood) end() (opened, failed int) {
	close(f.stop)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	return f.opened, f.failed
}

// TestConnectionFloodKeepsNodesUp: three processes with 1 024 descriptors
// each; node 1's API, peer and Raft ports are flooded with about 3× as many
// idle and slow connections as it has descriptors, from eight sources, while
// node 3 is killed and restarted (so Raft connections to node 1 are dialed
// anew). Every node stays up — dragonboat's accept loop panicked on "too
// many open files" before the listeners were bounded —, node 3 rejoins while
// the flood holds, and writes through node 1 succeed once it ends.
func TestConnectionFloodKeepsNodesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	nodes := lkCluster(t, 3)
	for _, n := range nodes {
		n.nofile = 1024
	}
	launchLK(t, nodes)
	c := &http.Client{Timeout: 10 * time.Second}
	if o := lkPut(c, nodes[0].api, 1, "flood-before", "v"); o.status != http.StatusOK {
		t.Fatalf("write before the flood: %+v", o)
	}

	n1 := nodes[0]
	targets := []string{n1.arg("--api-addr"), n1.arg("--peer-addr"), n1.arg("--raft-addr")}
	const perAddr = 1100
	f := startFlood(t, targets, perAddr)
	testutil.WaitUntil(t, 60*time.Second, 10*time.Millisecond, "the flood's connections are all dialed", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.opened+f.failed == perAddr*len(targets)
	})
	if err := nodes[2].signal(syscall.SIGKILL, 10*time.Second); err == nil {
		t.Fatal("node 3 exited cleanly on SIGKILL")
	}
	// Node 3 restarts and dials node 1 while the flood holds its ports:
	// Raft reconnects (node 3 gets ready) before the flood ends.
	nodes[2].start()
	nodes[2].waitReady(time.Now().Add(60 * time.Second))
	opened, failed := f.end()
	t.Logf("flood: %d connections opened, %d dials failed", opened, failed)

	for _, n := range nodes {
		if _, _, ok := n.running(); !ok {
			t.Fatalf("node %d died under the flood\n%s", n.id, lkTail(n.log.String(), 6000))
		}
	}
	testutil.WaitFor(t, 30*time.Second, 100*time.Millisecond, func() (bool, string) {
		last := lkPut(c, n1.api, 1, "flood-after", "w")
		return last.status == http.StatusOK, fmt.Sprintf("writes through node 1 did not resume after the flood: %+v", last)
	})
	// The bounds did the refusing, and say so.
	resp, err := c.Get(n1.api + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range []string{"api", "peer", "raft"} {
		// The flood's connections never prove themselves: each new one past a
		// bound makes room by closing the oldest of them (evicted).
		refused := false
		for _, reason := range []string{"total", "source", "evicted"} {
			refused = refused || metricPositive(string(b), fmt.Sprintf(`slotmeta_conn_refused_total{listener=%q,reason=%q}`, l, reason))
		}
		if !refused {
			t.Errorf("no %s connection refused or evicted:\n%s", l, grepLines(string(b), "slotmeta_conn_"))
		}
	}
}

// metricPositive reports whether the sample named (with labels) is above 0.
func metricPositive(text, sample string) bool {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v != "0"
		}
	}
	return false
}

func grepLines(text, sub string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
