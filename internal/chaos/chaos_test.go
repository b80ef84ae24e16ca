// Package chaos runs real in-process clusters under concurrent clients while
// faults are injected (schedule_test.go: leader transfers, node restarts),
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
//     (ownership_test.go), after every fault and at the end.
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

	"slotmeta/internal/slotstore/slotstoretest"
)

const (
	kvClients  = 4
	subClients = 2
)

func TestShortChaos(t *testing.T) {
	seeds := []int64{1, 2, 3}
	if n, _ := strconv.Atoi(os.Getenv("CHAOS_SEEDS")); n > 0 {
		seeds = nil
		base := time.Now().UnixNano()
		for i := 0; i < n; i++ {
			seeds = append(seeds, base+int64(i))
		}
	}
	dur := 3 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CHAOS_DURATION")); err == nil {
		dur = d
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runSchedule(t, seed, dur) })
	}
}

// runSchedule runs one seeded schedule of length dur and checks it.
func runSchedule(t *testing.T, seed int64, dur time.Duration) {
	tc := startCluster(t, slotstoretest.Options{Nodes: 3, Groups: 2})
	createChannels(tc)
	rec := newRecorder()
	rep := &scheduleReport{seed: seed, rec: rec, verdicts: map[string]string{}}
	rep.own.check(tc.c.Nodes)

	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	for id := 0; id < kvClients+subClients; id++ {
		c := &client{id: id, tc: tc, rec: rec, rng: rand.New(rand.NewSource(seed*31 + int64(id))),
			retryUntil: started.Add(dur + time.Second)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id < kvClients {
				c.runKVClient(ctx)
			} else {
				c.runSubClient(ctx)
			}
		}()
	}
	env := &faultEnv{tc: tc, rng: rand.New(rand.NewSource(seed))}
	rep.faults = runFaults(ctx, env, func() { rep.own.check(tc.c.Nodes) })
	wg.Wait()
	tc.c.WaitReady()
	finalKV, finalSubs := finalReads(t, tc, rec)
	rep.own.check(tc.c.Nodes)
	rep.run = time.Since(started)

	checkStart := time.Now()
	rep.verdicts["kv"], _ = linearizable("kv", seed, kvModel, rec.kv)
	rep.verdicts["subscribers"], _ = linearizable("subscribers", seed, subModel, rec.subs)
	checkLostKV(rec.kv, finalKV, &rep.lost)
	checkLostSubs(rec.subs, finalSubs, &rep.lost)
	rep.dups = append(append([]string(nil), rec.dups...), checkDuplicatesKV(rec.kv)...)
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
}

// finalReads closes the histories with a read of every key and every
// channel's subscribers through every node, once the cluster is ready and
// the clients are done. It returns the last of them per key and channel.
func finalReads(t *testing.T, tc *testCluster, rec *recorder) (map[string]kvOutput, map[string]uint8) {
	reader := &client{id: kvClients + subClients, tc: tc, rec: rec}
	kv, subs := map[string]kvOutput{}, map[string]uint8{}
	poll := func(what string, i int, read func(base string) bool) {
		deadline := time.Now().Add(15 * time.Second)
		for !read(tc.url(i)) {
			if time.Now().After(deadline) {
				t.Fatalf("final read of %s through n%d: no definite answer in 15s", what, i+1)
			}
			time.Sleep(50 * time.Millisecond) // polling with a deadline
		}
	}
	for i := 0; i < tc.size(); i++ {
		for _, key := range kvKeys {
			poll(key, i, func(base string) bool {
				out, ok := reader.kvGetAt(base, key, "kv.final_get")
				kv[key] = out
				return ok
			})
		}
		for _, ch := range subChannels {
			poll(ch, i, func(base string) bool {
				out, ok := reader.subList(base, ch, "sub.final_list")
				subs[ch] = out.Members
				return ok
			})
		}
	}
	return kv, subs
}
