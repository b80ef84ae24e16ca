package nethost

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Host is one network namespace with one slotmeta node on it.
type Host struct {
	c        *Cluster
	ID       int    // the node id
	NS       string // network namespace
	Veth     string // host side of its link to the bridge
	IP       string
	dataDir  string
	mounted  bool     // dataDir is a tmpfs of its own (disk.go)
	certsDir string   // its certificates (Options.TLS)
	cmdline  []string // binary and arguments
	log      syncBuffer
	cgroup   string // its cpu cgroup (Options.CPU), "" without
	acct     string // its cpuacct cgroup, where that is a hierarchy of its own

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exits
	exitErr error
	starts  int
}

func (h *Host) addr(port int) string { return net.JoinHostPort(h.IP, strconv.Itoa(port)) }

// API is the node's API base URL (https with Options.TLS).
func (h *Host) API() string {
	if h.c.o.TLS {
		return "https://" + h.addr(APIPort)
	}
	return "http://" + h.addr(APIPort)
}

// CertsDir is the host's certificates directory (Options.TLS; "" without).
func (h *Host) CertsDir() string { return h.certsDir }

// Exec runs a command inside the host's namespace and returns its combined
// output (e.g. another slotmeta invocation on the host's address).
func (h *Host) Exec(ctx context.Context, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS}, args...)...).CombinedOutput()
}

// Addr is host:port of the given port on the host's own address.
func (h *Host) Addr(port int) string { return h.addr(port) }

// DataDir is a directory of the host's own (the node's data).
func (h *Host) DataDir() string { return h.dataDir }

// Log is everything the node's processes wrote so far.
func (h *Host) Log() string { return h.log.String() }

// Start starts the node (again, on its data) inside its namespace.
func (h *Host) Start() {
	h.c.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.starts++
	fmt.Fprintf(&h.log, "=== nethost: start #%d of node %d at %s ===\n", h.starts, h.ID, time.Now().Format("15:04:05.000"))
	// ip netns exec enters the namespace and execs the binary: the process
	// is the node itself, so signals reach it.
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.NS}, h.cmdline...)...)
	cmd.Stdout, cmd.Stderr = &h.log, &h.log
	if err := cmd.Start(); err != nil {
		h.c.t.Fatalf("start node %d: %v", h.ID, err)
	}
	if cores := h.c.o.CPU; cores > 0 {
		// ip netns exec execs the node in place: the pid is the node's.
		if err := h.capCPU(cmd.Process.Pid, cores); err != nil {
			_ = cmd.Process.Kill()
			h.c.t.Fatalf("cap node %d at %.2f cores: %v", h.ID, cores, err)
		}
	}
	done := make(chan struct{})
	h.cmd, h.done = cmd, done
	go func() {
		err := cmd.Wait()
		h.mu.Lock()
		h.exitErr = err
		h.mu.Unlock()
		close(done)
	}()
}

// Running reports whether the node's current process has not exited.
func (h *Host) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return false
	}
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the node's process and waits for it to exit.
func (h *Host) Kill() {
	h.c.t.Helper()
	if !h.kill() {
		h.c.t.Fatalf("node %d is not running", h.ID)
	}
}

func (h *Host) kill() bool {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	return true
}

// Pause stops the node's process (SIGSTOP) as a long GC pause, a VM's
// suspension or a debugger would: its sockets stay open, what peers send
// waits in its buffers, and its clocks run on. Continue resumes it.
func (h *Host) Pause() { h.signal(syscall.SIGSTOP) }

// Continue resumes a paused node (SIGCONT).
func (h *Host) Continue() { h.signal(syscall.SIGCONT) }

// PauseFor pauses the node for d (the fault is held that long), then
// resumes it.
func (h *Host) PauseFor(d time.Duration) {
	h.c.t.Helper()
	h.Pause()
	defer h.Continue()
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}

func (h *Host) signal(sig syscall.Signal) {
	h.c.t.Helper()
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd == nil || !h.Running() {
		h.c.t.Fatalf("node %d is not running", h.ID)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		h.c.t.Fatalf("signal %v to node %d: %v", sig, h.ID, err)
	}
}

// Cut takes the host's link down: packets to and from it vanish (no reset,
// no refusal), as when a host drops off the network.
func (h *Host) Cut() { h.c.must("ip", "link", "set", h.Veth, "down") }

// Heal brings the link back up and removes any netem rule.
func (h *Host) Heal() {
	h.c.must("ip", "link", "set", h.Veth, "up")
	h.ClearLoss()
}

// Loss makes the host drop pct percent of the packets it receives and of
// those it sends, at random (nftables in its namespace: numgen random; the
// kernels this runs on may lack tc netem). Needs nft (CanLose).
func (h *Host) Loss(pct int) {
	h.c.t.Helper()
	rules := fmt.Sprintf(`table inet smloss {
  chain in { type filter hook input priority 0; policy accept; numgen random mod 100 < %d drop; }
  chain out { type filter hook output priority 0; policy accept; numgen random mod 100 < %d drop; }
}
`, pct, pct)
	cmd := exec.Command("ip", "netns", "exec", h.NS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.c.t.Fatalf("loss on node %d: %v: %s", h.ID, err, out)
	}
}

// ClearLoss removes the rules of Loss (none is fine).
func (h *Host) ClearLoss() {
	_ = exec.Command("ip", "netns", "exec", h.NS, "nft", "delete", "table", "inet", "smloss").Run()
}

// WaitReady polls /readyz until 200, failing if the process exits or the
// deadline passes.
func (h *Host) WaitReady(deadline time.Time) {
	h.c.t.Helper()
	c := h.c.client
	for time.Now().Before(deadline) {
		if !h.Running() {
			h.mu.Lock()
			err := h.exitErr
			h.mu.Unlock()
			h.c.t.Fatalf("node %d exited before it was ready: %v\n%s", h.ID, err, tail(h.Log(), 4000))
		}
		if h.Ready(c) {
			return
		}
		time.Sleep(50 * time.Millisecond) // readiness polling interval
	}
	h.c.t.Fatalf("node %d not ready by the deadline\n%s", h.ID, tail(h.Log(), 4000))
}

// Ready asks once whether the host serves (Options.Ready, else /readyz).
func (h *Host) Ready(c *http.Client) bool {
	if h.c.o.Ready != nil {
		return h.c.o.Ready(h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.API()+"/readyz", nil)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
