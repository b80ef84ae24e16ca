package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/nethost"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// Availability under faults, measured on separate hosts: three slotmeta
// processes, each on a network namespace of its own (package nethost), with
// the default Raft timing (election timeout 500 ms). Per episode one fault
// hits one node — its link cut (packets vanish), its process killed, 30 %
// of its packets lost each way — for faultFor, then heals, and the cluster
// runs on for afterHeal (rejoin, and the reconciler handing leadership back
// once the hold-down passed).
//
// Probe writers on the other nodes (the majority side) write fresh keys
// back to back and record every answer. An episode's refusal window is the
// longest time a retrying client waits, from the start of one of its writes
// during the fault, until some write started at or after it is
// acknowledged: a refusal, a hang and a slow write all count. The longest
// single write, the refusals and the acknowledged writes per second are
// reported beside it, and the same window after the heal (a second outage
// would show there). Meanwhile history clients write and read shared keys
// through every node (the cut one too), so the histories of every episode go
// through the safety checks of the in-process chaos runs: linearizability,
// no acknowledged write lost, no write applied twice.

// probe is one availability write as its client saw it.
type probe struct {
	node       int // 1-based
	start, end time.Time
	ok         bool
	code       string // error code, or "no_answer"
	key, value string
}

type probeLog struct {
	mu   sync.Mutex
	list []probe
}

func (l *probeLog) add(p probe) {
	l.mu.Lock()
	l.list = append(l.list, p)
	l.mu.Unlock()
}

func (l *probeLog) all() []probe {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// runProbes writes fresh keys through node i (0-based) until ctx ends.
func runProbes(ctx context.Context, hc *hostCluster, i, writer int, prefix string, l *probeLog) {
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("%s-n%d-w%d-%d", prefix, i+1, writer, seq)
		p := probe{node: i + 1, start: time.Now(), key: key, value: key}
		a := hc.do(hc.url(i), request{method: "PUT", path: kvPath(key), body: fmt.Sprintf(`{"value":%q}`, key)})
		p.end = time.Now()
		switch {
		case a.code == http.StatusOK || a.code == http.StatusCreated:
			p.ok = true
		case a.code == 0:
			p.code = "no_answer"
		default:
			p.code = a.errorCode()
		}
		if ctx.Err() != nil && !p.ok {
			return // cut short by the end of the episode: says nothing
		}
		l.add(p)
		if !p.ok {
			time.Sleep(10 * time.Millisecond) // retry at once, as an eager client does, without spinning
		}
	}
}

// startKVClients starts three history clients on keys (seeded from seed,
// retrying an unknown outcome until retryUntil), each done on wg when ctx
// ends.
func startKVClients(ctx context.Context, wg *sync.WaitGroup, hc *hostCluster, keys []string, rec *recorder, seed int64, retryUntil time.Time, prefix string) {
	for id := range 3 {
		c := &client{id: id, tc: hc, keys: keys, rec: rec, rng: rand.New(rand.NewSource(seed + int64(id))),
			retryUntil: retryUntil, idemPrefix: prefix + "-"}
		wg.Add(1)
		go func() { defer wg.Done(); c.runKVClient(ctx) }()
	}
}

// windowStats are a span's availability figures.
type windowStats struct {
	window  time.Duration // longest wait of a retrying client (see the top of the file)
	longest time.Duration // longest single write
	refused int           // writes answered with an error or not at all
	acked   int
	worst   probe // the write that waited longest
}

// windowOf measures the writes that started in [from, to), and those still
// in flight at from (their wait counted from from); horizon ends the wait of
// a write no later write made good.
func windowOf(ps []probe, from, to, horizon time.Time) windowStats {
	var succ []probe
	for _, p := range ps {
		if p.ok {
			succ = append(succ, p)
		}
	}
	sort.Slice(succ, func(i, j int) bool { return succ[i].start.Before(succ[j].start) })
	minEnd := make([]time.Time, len(succ)) // earliest ack among successes from index i on
	for i := len(succ) - 1; i >= 0; i-- {
		minEnd[i] = succ[i].end
		if i+1 < len(succ) && minEnd[i+1].Before(minEnd[i]) {
			minEnd[i] = minEnd[i+1]
		}
	}
	var s windowStats
	for _, p := range ps {
		if p.start.Before(from) && p.end.After(from) {
			p.start = from // in flight when the span began: it waits from then
		}
		if p.start.Before(from) || !p.start.Before(to) {
			continue
		}
		s.longest = max(s.longest, p.end.Sub(p.start))
		if p.ok {
			s.acked++
		} else {
			s.refused++
		}
		i := sort.Search(len(succ), func(i int) bool { return !succ[i].start.Before(p.start) })
		wait := horizon.Sub(p.start)
		if i < len(succ) {
			wait = minEnd[i].Sub(p.start)
		}
		if wait > s.window {
			s.window, s.worst = wait, p
		}
	}
	return s
}

// Fault kinds.
const (
	faultLeaderCut     = "leader_cut"
	faultLeaderKill    = "leader_kill"
	faultFollowerCut   = "follower_cut"
	faultControllerCut = "controller_cut"
	faultLeaderLoss    = "leader_loss30"
	// The disk faults need hosts with disks of their own (diskHosts).
	faultLeaderDiskLow    = "leader_disk_low"    // under the reserve: its leaderships move away
	faultFollowerDiskFull = "follower_disk_full" // under half of it: its replicas store nothing
)

// episode is one fault and what it did.
type episode struct {
	kind          string
	n             int
	target        slotstore.NodeID
	note          string // e.g. "also leads the controller"
	during, after windowStats
	writesPerSec  float64 // acknowledged writes (probes and history clients) per second during the fault
	// The reconciler's transfers in the episode, those toward the target
	// while it was faulted, and the probe writes refused while one ran.
	transfers, towardTarget, refusedInTransfers int
	skipsForTarget                              []string // the reasons it gave for not moving to the target
	faultAt, healAt                             time.Time
	decisions                                   []string // the group's decisions in the episode, for the log
	lin                                         string   // the history's verdict
	lost, dups, failures, histAcked             int
}

// runEpisode injects one fault of kind and measures it.
func runEpisode(t *testing.T, hc *hostCluster, kind string, n int, faultFor, afterHeal time.Duration) episode {
	t.Helper()
	ep := episode{kind: kind, n: n}
	leader := hc.agreedLeader(1, 0, 30*time.Second)
	ctrl := hc.ctrlLeader(int(leader) - 1)
	switch kind {
	case faultFollowerCut, faultFollowerDiskFull:
		for _, h := range hc.c.Hosts {
			if id := slotstore.NodeID(h.ID); id != leader && (ep.target == 0 || id != ctrl) {
				ep.target = id
			}
		}
	case faultControllerCut:
		ep.target = ctrl
		if ctrl == leader {
			ep.note = "it also leads group 1"
		}
	default:
		ep.target = leader
		if kind == faultLeaderDiskLow && leader == ctrl {
			// A group leader that does not lead the controller: its
			// report travels to the controller leader, as it mostly would
			// (the reconciler moves group 1 to it first: waitLeads below).
			ep.target = leader%slotstore.NodeID(hc.size()) + 1
		}
		// The reconciler would move leadership back to it: the transfer
		// gates must hold it while it is faulted, and let it happen after.
		if a := hc.do(hc.url(0), request{method: "PUT", path: "/v1/cluster/groups/1/preferred-leader",
			body: fmt.Sprintf(`{"node":%d}`, ep.target)}); a.code != http.StatusOK {
			t.Fatalf("set the preferred leader: %d %s", a.code, a.body)
		}
	}
	if ep.target == ctrl && kind != faultControllerCut {
		ep.note = "it also leads the controller"
	}
	target := hc.c.Hosts[ep.target-1]
	var majority []int
	for i, h := range hc.c.Hosts {
		if slotstore.NodeID(h.ID) != ep.target {
			majority = append(majority, i)
		}
	}

	prefix := fmt.Sprintf("e%d-%s", n, kind)
	keys := []string{prefix + "-alpha", prefix + "-bravo", prefix + "-charlie"}
	rec := newRecorder()
	probes := &probeLog{}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	started := time.Now()
	startKVClients(ctx, &wg, hc, keys, rec, int64(n)*131, started.Add(time.Second+faultFor+afterHeal), prefix)
	for _, i := range majority {
		for w := range 2 {
			wg.Add(1)
			go func() { defer wg.Done(); runProbes(ctx, hc, i, w, prefix, probes) }()
		}
	}
	time.Sleep(time.Second) // a hold, not a wait: a second of writes before the fault
	if kind != faultFollowerCut && kind != faultControllerCut && kind != faultFollowerDiskFull {
		// The target must still lead: a reconciler transfer toward the
		// preferred leader the group had before the episode set it (n1 at
		// bootstrap) may have been in flight when the target was chosen and
		// landed since; the reconciler then brings leadership back to the
		// target, its preferred leader now. Cutting a follower instead made
		// the episode measure the wrong fault (and count that transfer back
		// as one toward the cut-off node).
		hc.waitLeads(ep.target, 30*time.Second)
	}

	faultAt := time.Now()
	switch kind {
	case faultLeaderKill:
		target.Kill()
	case faultLeaderLoss:
		target.Loss(30)
	case faultLeaderDiskLow:
		mustFill(t, target, diskLowLeft)
	case faultFollowerDiskFull:
		mustFill(t, target, diskFullLeft)
	default:
		target.Cut()
	}
	time.Sleep(faultFor) // a hold: the fault lasts faultFor
	healAt := time.Now()
	switch kind {
	case faultLeaderKill:
		target.Start()
	case faultLeaderDiskLow, faultFollowerDiskFull:
		target.FreeDisk()
	default:
		target.Heal()
	}
	time.Sleep(afterHeal) // a hold: writes for afterHeal after the heal
	end := time.Now()
	stop()
	wg.Wait()
	for _, h := range hc.c.Hosts {
		h.WaitReady(time.Now().Add(30 * time.Second))
	}

	ps := probes.all()
	ep.faultAt, ep.healAt = faultAt, healAt
	ep.during = windowOf(ps, faultAt, healAt, end)
	ep.after = windowOf(ps, healAt, end.Add(-time.Second), end)
	histOK := 0
	for _, kind := range []string{"kv.put", "kv.cas", "kv.create", "kv.delete", "kv.cas_delete"} {
		histOK += rec.total(kind, outOK)
	}
	if d := healAt.Sub(faultAt).Seconds(); d > 0 {
		// History writes are spread over the whole episode: count their share.
		ep.writesPerSec = float64(ep.during.acked)/d + float64(histOK)/end.Sub(started).Seconds()
	}

	// The reconciler's view of the episode.
	type decisionList struct {
		Items []slotstore.Decision `json:"items"`
	}
	ds, err := getJSON[decisionList](hc, majority[0], "/v1/cluster/decisions")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		at := time.UnixMilli(d.AtMs)
		if d.Group != 1 || at.Before(faultAt) || at.After(end) {
			continue
		}
		// The leader's view of a link lags the heal a little; a freed disk
		// is seen only by the node's next check, and reported after it.
		faulted := at.Before(healAt.Add(time.Second))
		if kind == faultLeaderDiskLow || kind == faultFollowerDiskFull {
			faulted = at.Before(healAt)
		}
		ep.decisions = append(ep.decisions, fmt.Sprintf("%s %s/%s→n%d", rel(at, faultAt), d.Kind, d.Reason, d.PreferredLeader))
		switch d.Kind {
		case "transfer":
			ep.transfers++
			// A leader_disk_low transfer moves away from the preferred
			// leader it names (its target is in the detail).
			if d.PreferredLeader == ep.target && faulted && d.Reason != policy.ReasonLeaderDiskLow {
				ep.towardTarget++
			}
			for _, p := range ps {
				if !p.ok && p.end.After(at.Add(-100*time.Millisecond)) && p.start.Before(at.Add(time.Second)) {
					ep.refusedInTransfers++
				}
			}
		case "skip":
			if d.PreferredLeader == ep.target && faulted {
				ep.skipsForTarget = append(ep.skipsForTarget, string(d.Reason))
			}
		}
	}

	// Safety: the histories, and every acknowledged probe write.
	finalKV, _ := finalReads(t, hc, rec, keys, nil)
	ep.lin, _ = linearizable("kv-"+prefix, int64(n), kvModel, rec.kv)
	var lost lostReport
	checkLostKV(rec.kv, finalKV, &lost)
	ep.lost, ep.histAcked = lost.lost, lost.acked
	ep.dups = len(rec.dups) + len(checkDuplicatesKV(rec.kv))
	ep.failures = len(rec.failures)
	for _, f := range append(append(lost.details, rec.dups...), rec.failures...) {
		t.Errorf("%s #%d: %s", kind, n, f)
	}
	reader := hc.do
	for _, p := range ps {
		if !p.ok {
			continue
		}
		// A refusal that asks to retry (a leader change under way after the
		// heal) is no answer: asked again, as finalReads does, for a while.
		var a answer
		testutil.Eventually(15*time.Second, 50*time.Millisecond, func() (bool, string) {
			a = reader(hc.url(n%hc.size()), request{method: "GET", path: kvPath(p.key)})
			return a.code != http.StatusServiceUnavailable, ""
		})
		if a.code != http.StatusOK || !strings.Contains(string(a.body), strconv.Quote(p.value)) {
			ep.lost++
			t.Errorf("%s #%d: acknowledged probe write %s reads back %d %s", kind, n, p.key, a.code, a.body)
		}
	}
	return ep
}

func (ep episode) log(t *testing.T) {
	t.Logf("availability episode: kind=%s n=%d target=n%d%s window=%v longest_write=%v refused=%d acked=%d writes_per_s=%.0f "+
		"after_heal_window=%v after_heal_refused=%d reconciler_transfers=%d toward_target_while_faulted=%d refused_during_transfers=%d "+
		"skips_for_target=%v linearizable=%s lost=%d duplicate_applies=%d failures=%d history_acked=%d",
		ep.kind, ep.n, ep.target, noteSuffix(ep.note), ep.during.window.Round(time.Millisecond), ep.during.longest.Round(time.Millisecond),
		ep.during.refused, ep.during.acked, ep.writesPerSec, ep.after.window.Round(time.Millisecond), ep.after.refused,
		ep.transfers, ep.towardTarget, ep.refusedInTransfers, compactReasons(ep.skipsForTarget), ep.lin, ep.lost, ep.dups,
		ep.failures, ep.histAcked)
}

// rel is t as an offset from the fault.
func rel(t, faultAt time.Time) string { return fmt.Sprintf("%+.3fs", t.Sub(faultAt).Seconds()) }

// detail logs what lies behind a long window: the worst writes and the
// reconciler's decisions, as offsets from the fault.
func (ep episode) detail(t *testing.T) {
	for _, w := range []struct {
		what string
		s    windowStats
	}{{"during", ep.during}, {"after_heal", ep.after}} {
		if w.s.window < 200*time.Millisecond {
			continue
		}
		p := w.s.worst
		t.Logf("availability detail: kind=%s n=%d %s: worst write via n%d started %s, took %v (%s); heal at %s; decisions: %s",
			ep.kind, ep.n, w.what, p.node, rel(p.start, ep.faultAt), p.end.Sub(p.start).Round(time.Millisecond),
			firstNonEmpty(p.code, "ok"), rel(ep.healAt, ep.faultAt), strings.Join(ep.decisions, ", "))
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func compactReasons(rs []string) string {
	seen := map[string]int{}
	for _, r := range rs {
		seen[r]++
	}
	var parts []string
	for r, n := range seen {
		parts = append(parts, fmt.Sprintf("%s:%d", r, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, ",") + "]"
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// hostArgs are the node flags of the availability runs: default Raft timing
// and a short hold-down, so that leadership goes back to the healed node
// within the episode (and the writes during that transfer are measured).
var hostArgs = []string{"--leader-hold-down", "2s"}

// TestLeaderCutAvailability (in make test): one leader cut off on namespace
// hosts. The majority takes writes again within a bounded window, the
// reconciler starts no transfer toward the cut-off node (it records why
// not), and the histories pass the safety checks.
func TestLeaderCutAvailability(t *testing.T) {
	hc := startHosts(t, hostArgs...)
	ep := runEpisode(t, hc, faultLeaderCut, 1, 3*time.Second, 4*time.Second)
	ep.log(t)
	ep.detail(t)
	// The target is 1.5 s (make chaos measures it over many faults); the
	// test's bound leaves room for race-instrumented servers on two cores.
	if limit := 3 * time.Second; ep.during.window > limit {
		t.Errorf("writes on the majority side were refused or hung for %v after the leader was cut off (limit %v)", ep.during.window, limit)
	}
	if ep.towardTarget > 0 {
		t.Errorf("the reconciler started %d transfers toward the cut-off node", ep.towardTarget)
	}
	if len(ep.skipsForTarget) == 0 {
		t.Errorf("no skip for the cut-off preferred leader in the decision log: the test did not exercise the gates")
	}
	if ep.refusedInTransfers > 0 {
		t.Errorf("%d writes refused while a reconciler transfer ran", ep.refusedInTransfers)
	}
	if ep.lin != "ok" || ep.lost > 0 || ep.dups > 0 || ep.failures > 0 {
		t.Errorf("safety: linearizable=%s lost=%d duplicate_applies=%d failures=%d", ep.lin, ep.lost, ep.dups, ep.failures)
	}
	if ep.during.acked == 0 {
		t.Errorf("no write was acknowledged on the majority side during the cut")
	}
}

// TestAvailability (make chaos; AVAILABILITY_ROUNDS=N) runs N episodes of
// each leader fault and N/2 of the others, and prints the table per fault
// kind: the refusal window's median, p99 and maximum, and the rest.
func TestAvailability(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("AVAILABILITY_ROUNDS"))
	if rounds <= 0 {
		t.Skip("AVAILABILITY_ROUNDS not set (make chaos sets it)")
	}
	hc := startHosts(t, hostArgs...)
	plan := []struct {
		kind   string
		rounds int
	}{
		{faultLeaderCut, rounds}, {faultLeaderKill, rounds}, {faultFollowerCut, max(rounds/2, 1)},
		{faultControllerCut, max(rounds/2, 1)}, {faultLeaderLoss, max(rounds/2, 1)},
	}
	if err := nethost.CanLose(); err != nil {
		t.Logf("availability: kind=%s skipped: %v", faultLeaderLoss, err)
		plan = plan[:len(plan)-1]
	}
	var all []episode
	for r := 0; ; r++ {
		ran := false
		for _, p := range plan { // interleaved, so that slow drift hits every kind alike
			if r >= p.rounds {
				continue
			}
			ran = true
			ep := runEpisode(t, hc, p.kind, len(all)+1, 3*time.Second, 5*time.Second)
			ep.log(t)
			ep.detail(t)
			all = append(all, ep)
		}
		if !ran {
			break
		}
	}
	summarize(t, all)
}

// summarize logs the table per fault kind (in the order they first ran):
// the refusal window's median, p99 and maximum, and the rest.
func summarize(t *testing.T, all []episode) {
	var order []string
	for _, ep := range all {
		if !slices.Contains(order, ep.kind) {
			order = append(order, ep.kind)
		}
	}
	for _, kind := range order {
		var wins, longest, after []time.Duration
		var refused, toward, inTransfers, transfers, lost, dups, bad int
		var wps []float64
		for _, ep := range all {
			if ep.kind != kind {
				continue
			}
			wins = append(wins, ep.during.window)
			longest = append(longest, ep.during.longest)
			after = append(after, ep.after.window)
			refused += ep.during.refused
			toward += ep.towardTarget
			inTransfers += ep.refusedInTransfers
			transfers += ep.transfers
			lost += ep.lost
			dups += ep.dups
			if ep.lin != "ok" || ep.failures > 0 {
				bad++
			}
			wps = append(wps, ep.writesPerSec)
		}
		slices.Sort(wps)
		t.Logf("availability: kind=%s faults=%d window_p50=%v window_p99=%v window_max=%v longest_write_max=%v refused=%d "+
			"writes_per_s_median=%.0f after_heal_window_max=%v reconciler_transfers=%d toward_target_while_faulted=%d "+
			"refused_during_transfers=%d | safety: violations=%d lost=%d duplicate_applies=%d",
			kind, len(wins), pct(wins, 50).Round(time.Millisecond), pct(wins, 99).Round(time.Millisecond), pct(wins, 100).Round(time.Millisecond),
			pct(longest, 100).Round(time.Millisecond), refused, wps[len(wps)/2], pct(after, 100).Round(time.Millisecond),
			transfers, toward, inTransfers, bad, lost, dups)
	}
}
