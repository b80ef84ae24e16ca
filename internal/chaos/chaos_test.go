// Package chaos runs real in-process clusters under concurrent clients while
// faults are injected (schedule_test.go: leader transfers, node restarts;
// netfaults_test.go: isolated nodes, partitions, one-way and lossy links,
// slow fsync, a follower lagging until it needs a snapshot; moves_test.go:
// replica moves while the controller leader is lost),
// records every client operation and checks what the clients saw:
//
//   - business keys (kvmodel_test.go): puts, compare-and-set puts (If-Match,
//     If-None-Match: *), deletes and reads with revisions are linearizable;
//   - channel subscribers (submodel_test.go): adds, removes, lists and
//     membership tests are linearizable;
//   - no acknowledged write is lost, no write is applied twice, and an
//     Idempotency-Key is never applied twice (invariants_test.go,
//     idempotency_test.go);
//   - every hash slot is owned by exactly one group, and routed to it
//     (ownership_test.go), after every fault and at the end;
//   - every replica move ends, and then every group's Raft membership is
//     exactly the controller's desired peers (moves_test.go);
//   - the change feed, followed through the whole schedule and resumed on
//     random nodes, is ordered, never repeated, without a gap, its ids
//     never ahead of what was delivered, and holds every acknowledged
//     write once and nothing no client wrote (watchfollow_test.go,
//     watchcheck_test.go).
//
// `make test` runs a few fixed seeds (TestShortChaos); CHAOS_SEEDS=N runs N
// random schedules of CHAOS_DURATION each (make chaos), whose summaries
// (summary_test.go) land in chaos/results/.
package chaos

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

const (
	kvClients  = 4
	subClients = 2
)

// The chaos cluster: four nodes, two groups of three replicas (a free node
// per group to move a replica to), every node's Raft and peer traffic and
// disks through the fault harness. Snapshots every 64 entries keeping 16
// (dragonboat compacts the log to 16 entries behind each snapshot), so a
// follower cut off for a second while the clients write falls behind the
// leader's log and must install a snapshot. The controller observes and
// steps tasks every 200 ms (moves finish within a schedule), and a task
// phase fails after 3 s stuck (so faults make moves fail and resume).
// quiesce lets idle groups stop their heartbeats (--quiesce, off by
// default until its schedules are as clean as the others): every other
// schedule runs with it, so make chaos covers both.
func chaosOptions(quiesce bool) slotstoretest.Options {
	return slotstoretest.Options{Nodes: 4, Groups: 2, ReplicationFactor: 3, Faults: true, Tune: func(cfg *cluster.Config) {
		cfg.SnapshotEntries = 32
		cfg.CompactionOverhead = 8
		cfg.ObserveInterval = 200 * time.Millisecond
		cfg.TaskPhaseTimeout = 3 * time.Second
		cfg.DisableQuiesce = !quiesce
	}}
}

func TestShortChaos(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if n, _ := strconv.Atoi(os.Getenv("CHAOS_SEEDS")); n > 0 {
		seeds = nil
		base := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			seeds = append(seeds, base+int64(i))
		}
	}
	// CHAOS_SEED replays one schedule (timing still varies from run to run).
	if v, err := strconv.ParseInt(os.Getenv("CHAOS_SEED"), 10, 64); err == nil {
		seeds = []int64{v}
	}
	dur := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil {
		dur = d
	}
	var installs uint64
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { installs += runSchedule(t, seed, dur) })
	}
	// Every schedule lags a follower until it needs a snapshot (the lag
	// fault writes enough itself): one install at least must show.
	if installs == 0 && !t.Failed() {
		t.Errorf("no snapshot was installed in %d schedules", len(seeds))
	}
}

// runSchedule runs one seeded schedule of length dur and checks it. It
// returns the snapshots the cluster's replicas installed.
func runSchedule(t *testing.T, seed int64, dur time.Duration) uint64 {
	quiesce := seed%2 == 0
	opts := chaosOptions(quiesce)
	tc := startCluster(t, opts)
	createChannels(t, tc)
	rec := newRecorder()
	var quiet *quietGate // a quiesce schedule has a quiet fault
	if quiesce {
		quiet = &quietGate{}
	}
	rep := &scheduleReport{seed: seed, quiesce: quiesce, rec: rec, verdicts: map[string]string{}, moves: &moveLog{}}
	rep.own.check(tc.c.Nodes)
	// Two watches follow the feed from before the first write to the end:
	// one of every slot, one of a single key (the hub's filter at work).
	wf, wk := newWatchFollower(tc, seed, ""), newWatchFollower(tc, seed+1, kvKeys[0])
	rep.watch, rep.watchKey = wf.rep, wk.rep
	wf.start(t)
	wk.start(t)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	var watching sync.WaitGroup
	for _, f := range []*watchFollower{wf, wk} {
		watching.Go(func() { f.run(watchCtx) })
	}

	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	// The clients run until the fault schedule ends (it may run past dur
	// to inject every class of fault once).
	clientCtx, stopClients := context.WithCancel(context.Background())
	defer stopClients()
	var wg sync.WaitGroup
	for id := 0; id < kvClients+subClients; id++ {
		// Odd clients send through the route-aware client.
		c := &client{id: id, tc: tc, rec: rec, rng: rand.New(rand.NewSource(seed*31 + int64(id))),
			retryUntil: started.Add(dur + time.Second), quiet: quiet, smart: id%2 == 1}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id < kvClients {
				c.runKVClient(clientCtx)
			} else {
				c.runSubClient(clientCtx)
			}
		}()
	}
	env := &faultEnv{tc: tc, rng: rand.New(rand.NewSource(seed)), moves: rep.moves, quiet: quiet}
	rep.faults = runFaults(ctx, env, func() { rep.own.check(tc.c.Nodes) })
	stopClients()
	wg.Wait()
	tc.c.WaitReady()
	settleMoves(tc, rep.moves, opts.ReplicationFactor)
	settleSlotMoves(tc, rep.moves)
	finalKV, finalSubs := finalReads(t, tc, rec, kvKeys, subChannels)
	rep.own.check(tc.c.Nodes)
	rep.states = checkStates(tc.c.Nodes[0])
	behind, keyBehind := wf.catchUp(t), wk.catchUp(t)
	stopWatch()
	watching.Wait()
	if behind != "" {
		wf.rep.violation("the watch did not catch up in 20 s: %s", behind)
	}
	if keyBehind != "" {
		wk.rep.violation("the watch of %s did not catch up in 20 s: %s", wk.key, keyBehind)
	}
	rep.run = time.Since(started)
	rep.smart = tc.smart.Stats()
	rep.snaps, rep.dropped = tc.snapshots(), tc.c.Net.Dropped()
	for i := range tc.c.Nodes {
		rep.delayedSyncs += tc.c.Disk(i).DelayedSyncs()
	}

	checkStart := time.Now()
	rep.verdicts["kv"], _ = linearizable("kv", seed, kvModel, rec.kv)
	rep.verdicts["subscribers"], _ = linearizable("subscribers", seed, subModel, rec.subs)
	checkLostKV(rec.kv, finalKV, &rep.lost)
	checkLostSubs(rec.subs, finalSubs, &rep.lost)
	rep.dups = append(append([]string(nil), rec.dups...), checkDuplicatesKV(rec.kv)...)
	rep.watch.checkFeed(rec.kv, rec.subs, finalKV, finalSubs)
	rep.watchKey.checkSameAs(rep.watch, wk.key)
	rep.check = time.Since(checkStart)
	rep.log(t)

	if n := rep.violations(); n > 0 {
		t.Fatalf("seed %d: %d violations (see the lines above)", seed, n)
	}
	for _, kind := range []string{"kv.put", "kv.get", "sub.add", "sub.list"} {
		if rec.total(kind, outOK) == 0 {
			t.Fatalf("seed %d: the schedule did no work: no %s succeeded", seed, kind)
		}
	}
	if rep.smart.Direct == 0 {
		t.Fatalf("seed %d: the route-aware client sent nothing to a leader it knew: %+v", seed, rep.smart)
	}
	return rep.snaps.Received
}

// finalReads closes the histories with a read of every key and every
// channel's subscribers through every node, once the cluster is ready and
// the clients are done. It returns the last of them per key and channel.
func finalReads(t *testing.T, tc endpoints, rec *recorder, keys, channels []string) (map[string]kvOutput, map[string]uint8) {
	reader := &client{id: kvClients + subClients, tc: tc, rec: rec}
	kv, subs := map[string]kvOutput{}, map[string]uint8{}
	poll := func(what string, i int, read func(base string) bool) {
		testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
			return read(tc.url(i)), fmt.Sprintf("final read of %s through n%d: no definite answer", what, i+1)
		})
	}
	for i := 0; i < tc.size(); i++ {
		for _, key := range keys {
			poll(key, i, func(base string) bool {
				out, ok := reader.kvGetAt(base, key, "kv.final_get")
				kv[key] = out
				return ok
			})
		}
		for _, ch := range channels {
			poll(ch, i, func(base string) bool {
				out, ok := reader.subList(base, ch, "sub.final_list")
				subs[ch] = out.Members
				return ok
			})
		}
	}
	return kv, subs
}
