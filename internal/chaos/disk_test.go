package chaos

import (
	"bufio"
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/nethost"
)

// The disk faults (issue 48) on separate hosts, each node's data directory
// a 256 MiB filesystem of its own with a 64 MiB reserve (a 16 MiB ballast):
// leader_disk_low fills group 1's leader's disk until 30 MiB are left (46
// with its ballast given up: low, not full) — it refuses the writes it
// leads and the controller leader moves its leadership away;
// follower_disk_full fills a follower's until 8 MiB are left (24: under
// half the reserve) — its replicas store nothing its leaders send. Both are
// episodes of runEpisode: probe writers on the other nodes, history clients
// through every node, the window a retrying client waits, the safety
// checks.
const (
	diskBytes    = 256 << 20
	diskReserve  = 64 << 20
	diskLowLeft  = 30 << 20
	diskFullLeft = 8 << 20
)

// diskHosts starts three hosts with disks of their own.
func diskHosts(t *testing.T) *hostCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disks of their own are tmpfs mounts: root only")
	}
	return startHostsWith(t, nethost.Options{DiskBytes: diskBytes,
		Args: append([]string{"--disk-reserve-bytes", strconv.Itoa(diskReserve)}, hostArgs...)})
}

func mustFill(t *testing.T, h *nethost.Host, left int64) {
	t.Helper()
	if err := h.FillDisk(left); err != nil {
		t.Fatalf("fill node %d's disk: %v", h.ID, err)
	}
}

// TestDiskFaultsAvailability (in make test; make chaos runs
// AVAILABILITY_ROUNDS/2 of each): one episode of each disk fault. A low
// leader's group takes writes again on the other nodes within a bounded
// window, moved by a leader_disk_low decision and never back toward the
// low node while it is low; a full follower costs the writes nothing and
// drops what it is sent (slotmeta_raft_held_total); the histories pass the
// safety checks, and every node is ready again once its disk is freed.
func TestDiskFaultsAvailability(t *testing.T) {
	hc := diskHosts(t)
	rounds, _ := strconv.Atoi(os.Getenv("AVAILABILITY_ROUNDS"))
	rounds = max(rounds/2, 1)
	var all []episode
	for r := range rounds {
		for _, kind := range []string{faultLeaderDiskLow, faultFollowerDiskFull} {
			ep := runEpisode(t, hc, kind, len(all)+1, 3*time.Second, 5*time.Second)
			ep.log(t)
			ep.detail(t)
			all = append(all, ep)
			if ep.lin != "ok" || ep.lost > 0 || ep.dups > 0 || ep.failures > 0 {
				t.Errorf("%s #%d safety: linearizable=%s lost=%d duplicate_applies=%d failures=%d", kind, ep.n, ep.lin, ep.lost, ep.dups, ep.failures)
			}
			if ep.during.acked == 0 {
				t.Errorf("%s #%d: no write acknowledged on the other nodes during the fault", kind, ep.n)
			}
			// Limits for race-instrumented servers on two loaded cores; make
			// chaos reports the distribution.
			limit := 2 * time.Second
			switch kind {
			case faultLeaderDiskLow:
				limit = 6 * time.Second // a disk check (1 s), an observation, a transfer
				if !strings.Contains(strings.Join(ep.decisions, " "), "/leader_disk_low") {
					t.Errorf("%s #%d: no leader_disk_low decision for group 1: %v", kind, ep.n, ep.decisions)
				}
				if ep.towardTarget > 0 {
					t.Errorf("%s #%d: %d transfers toward the low node while it was low: %v", kind, ep.n, ep.towardTarget, ep.decisions)
				}
			case faultFollowerDiskFull:
				if held := metric(t, hc, int(ep.target)-1, "slotmeta_raft_held_total"); held == 0 && r == 0 {
					t.Errorf("%s #%d: node %d dropped nothing while full", kind, ep.n, ep.target)
				}
			}
			if ep.during.window > limit {
				t.Errorf("%s #%d: writes on the other nodes waited %v (limit %v)", kind, ep.n, ep.during.window, limit)
			}
		}
	}
	summarize(t, all)
}

// metric sums a family's samples on node i's /metrics.
func metric(t *testing.T, hc *hostCluster, i int, name string) float64 {
	t.Helper()
	a := hc.do(hc.url(i), request{method: "GET", path: "/metrics"})
	if a.code != http.StatusOK {
		t.Fatalf("GET /metrics of node %d: %d %s", i+1, a.code, a.body)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}
