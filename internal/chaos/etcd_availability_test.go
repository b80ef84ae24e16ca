package chaos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/nethost"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// The same availability measurement against etcd (ETCD_AVAILABILITY_ROUNDS=N,
// etcd on the PATH): three etcd members on namespace hosts of their own,
// with the same Raft timing as slotmeta's defaults (heartbeat 50 ms,
// election timeout 500 ms, pre-vote on, as slotmeta runs it), the leader cut
// off or killed N times each, probe writers on the majority side writing
// through etcd's JSON gateway (/v3/kv/put). Only the probes run: the window
// is computed exactly as for slotmeta (windowOf).

const (
	etcdClientPort = 2379
	etcdPeerPort   = 2380
)

func etcdCommand(bin string) func(h *nethost.Host, hosts []*nethost.Host) []string {
	return func(h *nethost.Host, hosts []*nethost.Host) []string {
		var initial []string
		for _, o := range hosts {
			initial = append(initial, fmt.Sprintf("e%d=http://%s", o.ID, o.Addr(etcdPeerPort)))
		}
		return []string{bin, "--name", fmt.Sprintf("e%d", h.ID), "--data-dir", h.DataDir(),
			"--listen-peer-urls", "http://" + h.Addr(etcdPeerPort), "--initial-advertise-peer-urls", "http://" + h.Addr(etcdPeerPort),
			"--listen-client-urls", "http://" + h.Addr(etcdClientPort), "--advertise-client-urls", "http://" + h.Addr(etcdClientPort),
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "nethost",
			"--heartbeat-interval", "50", "--election-timeout", "500", "--pre-vote=true", "--log-level", "error"}
	}
}

// etcdCall POSTs a JSON body to one of etcd's gateway endpoints.
func etcdCall(c *http.Client, h *nethost.Host, path string, body any, out any) (int, error) {
	b, _ := json.Marshal(body)
	resp, err := c.Post("http://"+h.Addr(etcdClientPort)+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, err
		}
	}
	if resp.StatusCode == http.StatusOK && bytes.Contains(raw, []byte(`"error"`)) {
		return 0, fmt.Errorf("etcd: %s", raw)
	}
	return resp.StatusCode, nil
}

// etcdLeader is the member every member names as the leader, once a write
// through each of them succeeds.
func etcdLeader(t *testing.T, c *nethost.Cluster, within time.Duration) *nethost.Host {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	const what = "the etcd members did not agree on a leader that takes writes"
	var leader *nethost.Host
	testutil.WaitFor(t, within, 50*time.Millisecond, func() (bool, string) {
		leaders := map[string]bool{}
		leader = nil
		for _, h := range c.Hosts {
			var st struct {
				Header struct {
					MemberID string `json:"member_id"`
				} `json:"header"`
				Leader string `json:"leader"`
			}
			code, err := etcdCall(hc, h, "/v3/maintenance/status", struct{}{}, &st)
			if err != nil || code != http.StatusOK || st.Leader == "" {
				return false, fmt.Sprintf("%s: status of n%d: %d %v, leader %q", what, h.ID, code, err, st.Leader)
			}
			leaders[st.Leader] = true
			if st.Leader == st.Header.MemberID {
				leader = h
			}
			put := map[string]string{"key": base64.StdEncoding.EncodeToString([]byte("warm")), "value": "d2FybQ=="}
			if code, err := etcdCall(hc, h, "/v3/kv/put", put, nil); err != nil || code != http.StatusOK {
				return false, fmt.Sprintf("%s: put through n%d: %d %v", what, h.ID, code, err)
			}
		}
		return len(leaders) == 1 && leader != nil, fmt.Sprintf("%s: leaders named %v (none named itself: %t)", what, slices.Sorted(maps.Keys(leaders)), leader == nil)
	})
	return leader
}

func TestAvailabilityEtcd(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ETCD_AVAILABILITY_ROUNDS"))
	if rounds <= 0 {
		t.Skip("ETCD_AVAILABILITY_ROUNDS not set")
	}
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd on the PATH (apt install etcd-server)")
	}
	if err := nethost.Available(); err != nil {
		t.Skip(err)
	}
	ready := func(h *nethost.Host) bool {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + h.Addr(etcdClientPort) + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"true"`))
	}
	c := nethost.Start(t, nethost.Options{Nodes: 3, Command: etcdCommand(bin), Ready: ready})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	defer client.CloseIdleConnections()
	wins := map[string][]time.Duration{}
	for r := 0; r < rounds; r++ {
		for _, kind := range []string{faultLeaderCut, faultLeaderKill} {
			leader := etcdLeader(t, c, 30*time.Second)
			probes := &probeLog{}
			ctx, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, h := range c.Hosts {
				if h == leader {
					continue
				}
				for w := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for seq := 0; ctx.Err() == nil; seq++ {
							key := fmt.Sprintf("e%d-%s-n%d-w%d-%d", r, kind, h.ID, w, seq)
							p := probe{node: h.ID, start: time.Now(), key: key}
							code, err := etcdCall(client, h, "/v3/kv/put", map[string]string{
								"key": base64.StdEncoding.EncodeToString([]byte(key)), "value": base64.StdEncoding.EncodeToString([]byte(key))}, nil)
							p.end, p.ok = time.Now(), err == nil && code == http.StatusOK
							if ctx.Err() != nil && !p.ok {
								return
							}
							probes.add(p)
							if !p.ok {
								time.Sleep(10 * time.Millisecond) // pacing of an eager client's retry, not a wait
							}
						}
					}()
				}
			}
			time.Sleep(time.Second) // a hold, not a wait: a second of writes before the fault
			faultAt := time.Now()
			if kind == faultLeaderKill {
				leader.Kill()
			} else {
				leader.Cut()
			}
			time.Sleep(3 * time.Second) // a hold: the fault lasts 3 s
			healAt := time.Now()
			if kind == faultLeaderKill {
				leader.Start()
			} else {
				leader.Heal()
			}
			time.Sleep(3 * time.Second) // a hold: 3 s of writes after the heal
			end := time.Now()
			stop()
			wg.Wait()
			for _, h := range c.Hosts {
				h.WaitReady(time.Now().Add(30 * time.Second))
			}
			s := windowOf(probes.all(), faultAt, healAt, end)
			after := windowOf(probes.all(), healAt, end.Add(-time.Second), end)
			wins[kind] = append(wins[kind], s.window)
			t.Logf("etcd availability episode: kind=%s n=%d window=%v longest_write=%v refused=%d acked=%d after_heal_window=%v",
				kind, r+1, s.window.Round(time.Millisecond), s.longest.Round(time.Millisecond), s.refused, s.acked, after.window.Round(time.Millisecond))
		}
	}
	for _, kind := range []string{faultLeaderCut, faultLeaderKill} {
		w := wins[kind]
		t.Logf("etcd availability: kind=%s faults=%d window_p50=%v window_p99=%v window_max=%v", kind, len(w),
			pct(w, 50).Round(time.Millisecond), pct(w, 99).Round(time.Millisecond), pct(w, 100).Round(time.Millisecond))
	}
}
