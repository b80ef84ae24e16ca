package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// lkSyncBuffer is a log sink that may be read while the process writes to it.
type lkSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lkSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lkSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lkNode is one member of a multi-process cluster started by the test. Only a
// process it started is ever signalled, by its *os.Process.
type lkNode struct {
	t    *testing.T
	id   int
	args []string
	api  string // http://host:port (or https://)
	log  *lkSyncBuffer
	// client calls the API (nil: a plain HTTP client).
	client *http.Client
	// nofile, when set, is the process's descriptor limit (soft and hard).
	nofile int

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exits
	exitErr error
	starts  int
}

// start launches the binary with n.args; the log keeps every incarnation.
func (n *lkNode) start() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.starts++
	fmt.Fprintf(n.log, "=== test: start #%d of node %d at %s ===\n", n.starts, n.id, time.Now().Format("15:04:05.000"))
	cmd := exec.Command(serverBin, n.args...)
	if n.nofile > 0 {
		// The shell sets both limits, then becomes the server (same PID).
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, n.nofile), serverBin}, n.args...)...)
	}
	cmd.Stdout, cmd.Stderr = n.log, n.log
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("start node %d: %v", n.id, err)
	}
	done := make(chan struct{})
	n.cmd, n.done = cmd, done
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.exitErr = err
		n.mu.Unlock()
		close(done)
	}()
}

// running reports whether the current incarnation has not exited.
func (n *lkNode) running() (*exec.Cmd, chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, nil, false
	}
	select {
	case <-n.done:
		return n.cmd, n.done, false
	default:
		return n.cmd, n.done, true
	}
}

// signal sends sig to the current incarnation and waits (bounded) for it to exit.
func (n *lkNode) signal(sig syscall.Signal, within time.Duration) error {
	n.t.Helper()
	cmd, done, ok := n.running()
	if !ok {
		n.t.Fatalf("node %d: not running, cannot send %v", n.id, sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		n.t.Fatalf("node %d: %v: %v", n.id, sig, err)
	}
	select {
	case <-done:
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.exitErr
	case <-time.After(within):
		n.t.Fatalf("node %d did not exit within %v after %v\n%s", n.id, within, sig, lkTail(n.log.String(), 4000))
		return nil
	}
}

// waitReady polls /readyz until 200, failing if the process exits or the
// deadline passes.
func (n *lkNode) waitReady(deadline time.Time) {
	n.t.Helper()
	c := &http.Client{Timeout: time.Second}
	if n.client != nil {
		c = n.client
	}
	state, ok := testutil.Eventually(time.Until(deadline), 20*time.Millisecond, func() (bool, string) {
		if _, _, ok := n.running(); !ok {
			n.mu.Lock()
			err := n.exitErr
			n.mu.Unlock()
			n.t.Fatalf("node %d exited before ready: %v\n%s", n.id, err, lkTail(n.log.String(), 4000))
		}
		resp, err := c.Get(n.api + "/readyz")
		if err != nil {
			return false, fmt.Sprintf("readyz: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("readyz: %d", resp.StatusCode)
	})
	if !ok {
		n.t.Fatalf("node %d not ready by the deadline (last %s)\n%s", n.id, state, lkTail(n.log.String(), 4000))
	}
}

func lkTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// startLKCluster starts size processes concurrently (bootstrap needs a
// quorum) and waits for every /readyz. Cleanup kills whatever still runs.
func startLKCluster(t *testing.T, size int, extra ...string) []*lkNode {
	t.Helper()
	nodes := lkCluster(t, size, extra...)
	launchLK(t, nodes)
	return nodes
}

// lkCluster describes size nodes on free loopback ports, not started yet.
func lkCluster(t *testing.T, size int, extra ...string) []*lkNode {
	t.Helper()
	type addrs struct{ api, raft, peer string }
	as := make([]addrs, size)
	var members []string
	for i := range as {
		as[i] = addrs{freePort(t), freePort(t), freePort(t)}
		members = append(members, fmt.Sprintf("%d=%s/%s/%s", i+1, as[i].raft, as[i].api, as[i].peer))
	}
	nodes := make([]*lkNode, size)
	for i := range nodes {
		args := []string{
			"--node-id", fmt.Sprint(i + 1), "--data-dir", t.TempDir(),
			"--api-addr", as[i].api, "--raft-addr", as[i].raft, "--peer-addr", as[i].peer,
			"--initial-members", strings.Join(members, ","),
		}
		nodes[i] = &lkNode{t: t, id: i + 1, args: append(args, extra...), api: "http://" + as[i].api, log: &lkSyncBuffer{}}
	}
	return nodes
}

// arg is the value of flag in n's arguments.
func (n *lkNode) arg(flag string) string {
	for i, a := range n.args[:len(n.args)-1] {
		if a == flag {
			return n.args[i+1]
		}
	}
	return ""
}

// launchLK starts the nodes concurrently (bootstrap needs a quorum), waits
// for every /readyz, and registers the cleanup that kills whatever still
// runs (and shows the logs of a failed test).
func launchLK(t *testing.T, nodes []*lkNode) {
	t.Helper()
	t.Cleanup(func() {
		for _, n := range nodes {
			if cmd, done, ok := n.running(); ok {
				_ = cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("---- node %d log (tail) ----\n%s", n.id, lkTail(n.log.String(), 6000))
			}
		}
	})
	for _, n := range nodes {
		n.start()
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, n := range nodes {
		n.waitReady(deadline)
	}
}

// lkRoutes is GET /v1/cluster/routes.
type lkRoutes struct {
	Revision  uint64 `json:"revision"`
	HashSlots []struct {
		HashSlot    slotstore.HashSlot `json:"hash_slot"`
		Group       slotstore.GroupID  `json:"group"`
		LeaderNode  slotstore.NodeID   `json:"leader_node"`
		LeaderTerm  uint64             `json:"leader_term"`
		ConfigEpoch uint64             `json:"config_epoch"`
	} `json:"hash_slots"`
}

func getLKRoutes(c *http.Client, api string) (*lkRoutes, error) {
	resp, err := c.Get(api + "/v1/cluster/routes")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("routes: %d %s", resp.StatusCode, b)
	}
	var r lkRoutes
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("routes: %v: %s", err, b)
	}
	if len(r.HashSlots) != slotstore.HashSlotCount {
		return nil, fmt.Errorf("routes: %d hash slots, want %d", len(r.HashSlots), slotstore.HashSlotCount)
	}
	return &r, nil
}

// lkOutcome is what one PUT answered.
type lkOutcome struct {
	key, value string
	node       int
	start, end time.Time
	status     int    // 0 for a transport error
	code       string // error.code of a non-2xx answer
	transport  string // kind of transport failure, "" if an answer came
	detail     string
	problem    string // why this answer breaks the API contract, "" if it does not
}

// lkAllowedCodes are the answers a write may give while a leader dies.
var lkAllowedCodes = map[string]int{
	"route_not_ready": http.StatusServiceUnavailable,
	"not_leader":      http.StatusServiceUnavailable,
	"busy":            http.StatusServiceUnavailable,
	"timeout":         http.StatusServiceUnavailable,
	"queue_full":      http.StatusTooManyRequests,
}

func lkTransportKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "client_timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "conn_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "conn_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	}
	return "other"
}

// lkPut writes key=value to node and classifies the outcome.
func lkPut(c *http.Client, api string, node int, key, value string) lkOutcome {
	o := lkOutcome{key: key, value: value, node: node, start: time.Now()}
	body := fmt.Sprintf(`{"value":%q}`, value)
	req, err := http.NewRequest(http.MethodPut, api+"/v1/kv/"+key, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		o.end = time.Now()
		o.transport, o.detail = lkTransportKind(err), err.Error()
		return o
	}
	b, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	o.end, o.status = time.Now(), resp.StatusCode
	if rerr != nil {
		// The status line came but the body did not: an answer we cannot
		// trust either way.
		o.transport, o.detail = lkTransportKind(rerr), fmt.Sprintf("status %d, reading body: %v", resp.StatusCode, rerr)
		o.status = 0
		return o
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var kv struct {
			Key      string  `json:"key"`
			Value    *string `json:"value"`
			Revision uint64  `json:"revision"`
		}
		switch {
		case len(b) == 0:
			o.problem = fmt.Sprintf("%d with an empty body", resp.StatusCode)
		case json.Unmarshal(b, &kv) != nil:
			o.problem = fmt.Sprintf("%d with a body that is not JSON: %q", resp.StatusCode, b)
		case kv.Key != key || kv.Value == nil || *kv.Value != value || kv.Revision == 0:
			o.problem = fmt.Sprintf("%d with a body that does not echo the write: %s", resp.StatusCode, b)
		}
		return o
	}
	var eb struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		o.problem = fmt.Sprintf("%d without the error JSON: %q", resp.StatusCode, b)
		return o
	}
	o.code, o.detail = eb.Error.Code, string(b)
	want, ok := lkAllowedCodes[o.code]
	switch {
	case !ok:
		o.problem = fmt.Sprintf("%d with code %q, not one of route_not_ready/not_leader/busy/timeout/queue_full: %s", resp.StatusCode, o.code, b)
	case resp.StatusCode != want:
		o.problem = fmt.Sprintf("code %q answered %d, want %d: %s", o.code, resp.StatusCode, want, b)
	}
	return o
}

// TestKillLeaderWhileWriting: a 3-process cluster under a steady write load
// loses the leader of group 1 to SIGKILL. Writes to that group resume on the
// survivors after an election, the killed node rejoins, every acknowledged
// write reads back through every node, and every refused write was refused
// with a retryable 503/429 error JSON.
func TestKillLeaderWhileWriting(t *testing.T) {
	testStart := time.Now()
	nodes := startLKCluster(t, 3,
		"--groups", "4", "--replication-factor", "3", "--rtt", "10ms",
		// The test routes by the table it read at the start: no slot moves.
		"--balancer=false",
		"--log-level", "warn", "--cluster-secret", "test-secret-0123456789")
	t.Logf("cluster of 3 ready in %v", time.Since(testStart).Round(time.Millisecond))

	ctl := &http.Client{Timeout: 3 * time.Second}
	routes, err := getLKRoutes(ctl, nodes[0].api)
	if err != nil {
		t.Fatal(err)
	}
	groupOf := func(key string) slotstore.GroupID {
		return routes.HashSlots[slotstore.HashSlotOfString(key)].Group
	}

	// The writers.
	var alive [3]atomic.Bool
	for i := range alive {
		alive[i].Store(true)
	}
	var (
		killedNode  atomic.Int64 // 1-based id of the killed node, 0 before the kill
		killedAt    atomic.Int64 // UnixNano of the kill
		resumedAt   atomic.Int64 // UnixNano of the first qualifying group-1 ack
		resumedBy   atomic.Int64 // node that acked it
		outcomesMu  sync.Mutex
		outcomes    []lkOutcome
		stopWriters = make(chan struct{})
		writers     sync.WaitGroup
	)
	wc := &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true},
	}
	defer wc.CloseIdleConnections()
	for g := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			next := g
			for n := 0; ; n++ {
				select {
				case <-stopWriters:
					return
				default:
				}
				idx := -1
				for range 3 {
					i := next % 3
					next++
					if alive[i].Load() {
						idx = i
						break
					}
				}
				if idx < 0 {
					panic("no live node") // the test never kills more than one
				}
				key := fmt.Sprintf("w%d-%d", g, n)
				o := lkPut(wc, nodes[idx].api, idx+1, key, rand.Text())
				if o.status >= 200 && o.status < 300 && groupOf(key) == 1 {
					if k, at := killedNode.Load(), killedAt.Load(); k != 0 && int64(idx+1) != k && o.start.UnixNano() > at {
						if resumedAt.CompareAndSwap(0, o.end.UnixNano()) {
							resumedBy.Store(int64(idx + 1))
						}
					}
				}
				outcomesMu.Lock()
				outcomes = append(outcomes, o)
				outcomesMu.Unlock()
			}
		}()
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopWriters)
			writers.Wait()
		}
	}
	defer stop()

	time.Sleep(1500 * time.Millisecond) // writing phase 1

	// Find the leader of group 1.
	var leader slotstore.NodeID
	var leaderTerm uint64
	// Not failing here: the check below says what the routes showed.
	testutil.Eventually(10*time.Second, 20*time.Millisecond, func() (bool, string) {
		for _, n := range nodes {
			r, err := getLKRoutes(ctl, n.api)
			if err != nil {
				continue
			}
			for _, row := range r.HashSlots {
				if row.Group == 1 && row.LeaderNode != 0 {
					leader, leaderTerm = row.LeaderNode, row.LeaderTerm
					return true, ""
				}
			}
		}
		return false, ""
	})
	if leader < 1 || leader > 3 {
		t.Fatalf("no leader of group 1 in the routes (got %d)", leader)
	}
	if r, err := getLKRoutes(ctl, nodes[0].api); err == nil {
		leaders := map[slotstore.GroupID]slotstore.NodeID{}
		for _, row := range r.HashSlots {
			leaders[row.Group] = row.LeaderNode
		}
		t.Logf("group leaders before the kill (group→node): %v", leaders)
	}
	victim := nodes[leader-1]
	outcomesMu.Lock()
	before := len(outcomes)
	outcomesMu.Unlock()
	t.Logf("group 1 leader is node %d (term %d); %d writes answered so far; SIGKILL it", leader, leaderTerm, before)

	alive[leader-1].Store(false)
	kill := time.Now()
	killedAt.Store(kill.UnixNano())
	killedNode.Store(int64(leader))
	if err := victim.signal(syscall.SIGKILL, 10*time.Second); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL?", leader)
	}

	// For the log only: when the survivors first report a new leader of group 1.
	electedCh := make(chan string, 1)
	go func() {
		c := &http.Client{Timeout: 500 * time.Millisecond}
		state, _ := testutil.Eventually(time.Until(kill.Add(20*time.Second)), 5*time.Millisecond, func() (bool, string) {
			for _, n := range nodes {
				if n == victim {
					continue
				}
				r, err := getLKRoutes(c, n.api)
				if err != nil {
					continue
				}
				for _, row := range r.HashSlots {
					if row.Group == 1 && row.LeaderNode != 0 && row.LeaderNode != leader {
						return true, fmt.Sprintf("node %d reported node %d as group 1's leader (term %d) %v after the kill",
							n.id, row.LeaderNode, row.LeaderTerm, time.Since(kill).Round(time.Millisecond))
					}
				}
			}
			return false, "no survivor reported a new leader of group 1 within 20s"
		})
		electedCh <- state
	}()

	// Writes to group 1 resume through a survivor.
	testutil.WaitFor(t, time.Until(kill.Add(20*time.Second)), 10*time.Millisecond, func() (bool, string) {
		return resumedAt.Load() != 0, fmt.Sprintf("no write to group 1 succeeded through a surviving node within 20s of killing node %d", leader)
	})
	resumed := time.Unix(0, resumedAt.Load())
	t.Logf("writes to group 1 resumed %v after the kill (first ack through node %d)", resumed.Sub(kill).Round(time.Millisecond), resumedBy.Load())
	t.Logf("election: %s", <-electedCh)
	for _, n := range nodes {
		if n == victim {
			continue
		}
		if r, err := getLKRoutes(ctl, n.api); err == nil {
			for _, row := range r.HashSlots {
				if row.Group == 1 {
					t.Logf("node %d now sees group 1 led by node %d (term %d)", n.id, row.LeaderNode, row.LeaderTerm)
					break
				}
			}
		}
	}

	// Restart the killed node with the same arguments and data dir.
	restart := time.Now()
	victim.start()
	victim.waitReady(time.Now().Add(30 * time.Second))
	t.Logf("node %d restarted and ready in %v", leader, time.Since(restart).Round(time.Millisecond))
	alive[leader-1].Store(true)
	rejoined := time.Now()

	time.Sleep(time.Second) // writing phase 3, with the restarted node in the rotation
	stop()

	// Sort the answers.
	var (
		acked      = map[string]string{}
		unknown    = map[string]string{} // not acknowledged: key → value sent
		errCodes   = map[string]int{}
		transports = map[string]int{}
		problems   []string
		perNode    [4]struct{ ok, errs, transport int }
		phaseErrs  = map[string]int{}
	)
	for _, o := range outcomes {
		switch {
		case o.problem != "":
			problems = append(problems, fmt.Sprintf("PUT %s via node %d at kill%+v: %s", o.key, o.node, o.start.Sub(kill).Round(time.Millisecond), o.problem))
			if o.status >= 200 && o.status < 300 {
				acked[o.key] = o.value // it said yes: hold it to it
			} else {
				unknown[o.key] = o.value
			}
		case o.transport != "":
			where := "survivor"
			if o.node == int(leader) {
				where = "killed node"
			}
			transports[o.transport+" ("+where+")"]++
			perNode[o.node].transport++
			unknown[o.key] = o.value
			if o.node != int(leader) || o.transport != "conn_reset" && o.transport != "eof" && o.transport != "conn_refused" {
				t.Logf("transport error: PUT %s (group %d) via node %d, started kill%+v, took %v: %s", o.key, groupOf(o.key), o.node,
					o.start.Sub(kill).Round(time.Millisecond), o.end.Sub(o.start).Round(time.Millisecond), o.detail)
			}
		case o.status >= 200 && o.status < 300:
			acked[o.key] = o.value
			perNode[o.node].ok++
		default:
			errCodes[fmt.Sprintf("%d %s", o.status, o.code)]++
			phase := "before kill"
			switch {
			case o.start.After(rejoined):
				phase = "after rejoin"
			case o.start.After(resumed):
				phase = "resumed→rejoin"
			case o.start.After(kill):
				phase = "kill→resumed"
			}
			pk := fmt.Sprintf("%s: node %d %s", phase, o.node, o.code)
			if phaseErrs[pk] < 2 { // a sample of each kind, for the log
				t.Logf("refusal sample [%s]: PUT %s (group %d) started kill%+v, answered after %v: %s", pk, o.key, groupOf(o.key),
					o.start.Sub(kill).Round(time.Millisecond), o.end.Sub(o.start).Round(time.Millisecond), strings.TrimSpace(o.detail))
			}
			phaseErrs[pk]++
			perNode[o.node].errs++
			unknown[o.key] = o.value
		}
	}
	t.Logf("writes: %d answered in all, %d acknowledged, errors by code %v, transport errors %v", len(outcomes), len(acked), errCodes, transports)
	for i := 1; i <= 3; i++ {
		t.Logf("  node %d: %d acked, %d refused, %d transport errors", i, perNode[i].ok, perNode[i].errs, perNode[i].transport)
	}
	t.Logf("  refusals by phase (started in), node and code: %v", phaseErrs)
	var g1acked int
	for k := range acked {
		if groupOf(k) == 1 {
			g1acked++
		}
	}
	t.Logf("  %d of the acknowledged keys are in group 1", g1acked)
	var windowAcks int
	var firstAfterKill time.Time
	for _, o := range outcomes {
		if o.problem == "" && o.transport == "" && o.status >= 200 && o.status < 300 && o.start.After(kill) {
			if o.end.Before(resumed) {
				windowAcks++
			}
			if firstAfterKill.IsZero() || o.end.Before(firstAfterKill) {
				firstAfterKill = o.end
			}
		}
	}
	if !firstAfterKill.IsZero() {
		t.Logf("  first ack of any group for a write started after the kill: kill+%v; acks (any group) before group 1 resumed: %d",
			firstAfterKill.Sub(kill).Round(time.Millisecond), windowAcks)
	}
	if len(problems) > 0 {
		for i, p := range problems {
			if i == 20 {
				t.Errorf("… and %d more", len(problems)-20)
				break
			}
			t.Errorf("contract violation: %s", p)
		}
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged")
	}

	// Every acknowledged key reads back through every node; every other key
	// reads the same through every node, and if present with the value sent.
	type readAns struct {
		status int
		value  string
		err    string
	}
	rc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer rc.CloseIdleConnections()
	readKey := func(n *lkNode, key string) readAns {
		// Retry only explicit, retryable unavailability, within a bound:
		// what the last answer said is the answer either way.
		var ans readAns
		testutil.Eventually(10*time.Second, 20*time.Millisecond, func() (bool, string) {
			resp, err := rc.Get(n.api + "/v1/kv/" + key)
			if err != nil {
				ans = readAns{err: err.Error()}
				return true, ""
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				var kv struct {
					Value string `json:"value"`
				}
				if err := json.Unmarshal(b, &kv); err != nil {
					ans = readAns{status: 200, err: fmt.Sprintf("bad body %q", b)}
				} else {
					ans = readAns{status: 200, value: kv.Value}
				}
			case http.StatusNotFound:
				ans = readAns{status: 404}
			default:
				ans = readAns{status: resp.StatusCode, err: string(b)}
			}
			return resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests, ""
		})
		return ans
	}
	type job struct {
		key, value string
		acked      bool
	}
	jobs := make(chan job)
	var (
		readMu       sync.Mutex
		readFailures []string
		committed    int // unacknowledged writes found applied
		reads        atomic.Int64
	)
	readStart := time.Now()
	var readers sync.WaitGroup
	for range 16 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for j := range jobs {
				var ans [3]readAns
				var fails []string
				// An unacknowledged write may still be in the Raft log and
				// commit while it is being read: reread a disagreement, three
				// reads at most, half a second apart (the last one is judged).
				testutil.Retry(3, 500*time.Millisecond, func() bool {
					for i, n := range nodes {
						ans[i] = readKey(n, j.key)
						reads.Add(1)
					}
					return j.acked || (ans[0].status == ans[1].status && ans[1].status == ans[2].status)
				})
				for i, a := range ans {
					switch {
					case a.err != "":
						fails = append(fails, fmt.Sprintf("node %d: %d %s", i+1, a.status, a.err))
					case j.acked && a.status == 404:
						fails = append(fails, fmt.Sprintf("node %d: acknowledged write MISSING (404)", i+1))
					case a.status == 200 && a.value != j.value:
						fails = append(fails, fmt.Sprintf("node %d: value %q, written %q", i+1, a.value, j.value))
					case a.status != ans[0].status:
						fails = append(fails, fmt.Sprintf("nodes disagree: node 1 %d, node %d %d", ans[0].status, i+1, a.status))
					}
				}
				readMu.Lock()
				if len(fails) > 0 {
					readFailures = append(readFailures, fmt.Sprintf("GET %s (acked=%v, group %d): %s", j.key, j.acked, groupOf(j.key), strings.Join(fails, "; ")))
				} else if !j.acked && ans[0].status == 200 {
					committed++
				}
				readMu.Unlock()
			}
		}()
	}
	keys := make([]string, 0, len(acked))
	for k := range acked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		jobs <- job{k, acked[k], true}
	}
	for k, v := range unknown {
		jobs <- job{k, v, false}
	}
	close(jobs)
	readers.Wait()
	sort.Strings(readFailures)
	for i, f := range readFailures {
		if i == 30 {
			t.Errorf("… and %d more read-back failures", len(readFailures)-30)
			break
		}
		t.Errorf("read-back: %s", f)
	}
	t.Logf("read back %d acknowledged + %d unacknowledged keys through 3 nodes (%d GETs) in %v; %d unacknowledged writes had been applied",
		len(acked), len(unknown), reads.Load(), time.Since(readStart).Round(time.Millisecond), committed)

	// Clean shutdown of all three.
	var stops sync.WaitGroup
	exitErrs := make([]error, len(nodes))
	for i, n := range nodes {
		cmd, _, ok := n.running()
		if !ok {
			t.Errorf("node %d is not running at the end", n.id)
			continue
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("node %d: SIGTERM: %v", n.id, err)
		}
		stops.Add(1)
		go func() {
			defer stops.Done()
			_, done, _ := n.running()
			select {
			case <-done:
				n.mu.Lock()
				exitErrs[i] = n.exitErr
				n.mu.Unlock()
			case <-time.After(30 * time.Second):
				exitErrs[i] = errors.New("did not exit within 30s of SIGTERM")
			}
		}()
	}
	stops.Wait()
	for i, err := range exitErrs {
		if err != nil {
			t.Errorf("node %d: unclean exit after SIGTERM: %v\n%s", i+1, err, lkTail(nodes[i].log.String(), 3000))
		}
	}
	t.Logf("whole test took %v", time.Since(testStart).Round(time.Millisecond))
}
