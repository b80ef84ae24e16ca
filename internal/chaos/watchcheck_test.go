package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// The watch-history checks (issue 27): what the watchFollower saw of the
// change feed, against the workload's histories and the final reads. The
// per-event checks (order, no repeat, no gap, ids never ahead) run as the
// events come (watchfollow_test.go); these run at the end, once the
// follower has delivered everything committed by then:
//
//   - every acknowledged put of a business key is in the feed exactly once,
//     with the revision its answer gave; a put of unknown outcome at most
//     once; a put refused (412) or answered 404 never; no value is in the
//     feed that no client wrote;
//   - puts of a key are in the feed in real-time order: one acknowledged
//     before another was sent comes first;
//   - a key's deletes in the feed are at least its acknowledged deletes and
//     at most those plus its deletes of unknown outcome; a channel's
//     subscriber puts and deletes at least what the acknowledged changes
//     reported changed;
//   - replaying the feed from empty gives the final reads: every key's
//     value (or its absence) and every channel's subscribers.
type watchReport struct {
	streams, progress     int // streams opened, progress marks
	changeEvents, changes int
	elsewhere             int // resumes on another node than the last stream's
	silent, cutByRestart  int // streams dropped silent for a second, cut by a node's restart
	refused, errors       map[string]int
	kv                    map[string][]kvChange  // key → its changes in feed order
	subs                  map[string][]subChange // channel → its subscriber changes
	checkedPuts           int
	violations            []string
}

type kvChange struct {
	kind, value string
	rev         uint64
}

type subChange struct{ kind, uid string }

func newWatchReport() *watchReport {
	return &watchReport{refused: map[string]int{}, errors: map[string]int{},
		kv: map[string][]kvChange{}, subs: map[string][]subChange{}}
}

func (w *watchReport) violation(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// line is the report's figures, one line (the "watch:" line of a schedule).
func (w *watchReport) line() string {
	return fmt.Sprintf("streams=%d resumed_elsewhere=%d cut_by_restart=%d silent=%d refused=%s error_events=%s change_events=%d changes=%d progress=%d acked_puts_checked=%d watch_violations=%d",
		w.streams, w.elsewhere, w.cutByRestart, w.silent, countMap(w.refused), countMap(w.errors),
		w.changeEvents, w.changes, w.progress, w.checkedPuts, len(w.violations))
}

func countMap(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s:%d", strings.ReplaceAll(k, " ", "_"), n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// feedHead is the feed's position once every change committed when it is
// called is counted: the first mark of a linearizable watch, from any node
// that starts one.
func feedHead(t testing.TB, tc *testCluster) watch.Cursor {
	var head watch.Cursor
	testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
		for i := 0; i < tc.size(); i++ {
			if c, ok := firstMark(tc.url(i)); ok {
				head = c
				return true, ""
			}
		}
		return false, "no node started a linearizable watch"
	})
	return head
}

// firstMark is the id of a linearizable watch's first event through base.
func firstMark(base string) (watch.Cursor, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/watch?linearizable=true&resource="+watchResourcesAll, nil)
	if err != nil {
		return watch.Cursor{}, false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return watch.Cursor{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return watch.Cursor{}, false
	}
	ev, ok := <-testutil.SSEEvents(resp.Body)
	c, err := watch.ParseCursor(ev.ID)
	return c, ok && ev.Event == "progress" && err == nil
}

// catchUp waits (at most 20 s) until f has delivered every change
// committed when it is called, and returns "" or how far it is behind
// (the caller records that once the follower has stopped: the report is
// the follower's own until then).
func (f *watchFollower) catchUp(t testing.TB) (behind string) {
	target := feedHead(t, f.tc)
	state, ok := testutil.Eventually(20*time.Second, 20*time.Millisecond, func() (bool, string) { return f.reached(target) })
	if ok {
		return ""
	}
	return state
}

// checkFeed compares the feed with the histories and the final reads
// (see watchReport). Call it once the follower has stopped.
func (w *watchReport) checkFeed(kvOps, subOps []porcupine.Operation, finalKV map[string]kvOutput, finalSubs map[string]uint8) {
	w.checkKVPuts(kvOps)
	w.checkKVDeletes(kvOps)
	for key, final := range finalKV {
		changes := w.kv[key]
		got := kvOutput{Out: outNotFound}
		if n := len(changes); n > 0 && changes[n-1].kind == "put" {
			got = kvOutput{Out: outOK, Value: changes[n-1].value}
		}
		if got.Out != final.Out || got.Value != final.Value {
			w.violation("the feed of key %s ends at %s %q; the final read is %s %q", key, got.Out, got.Value, final.Out, final.Value)
		}
	}
	w.checkSubs(subOps, finalSubs)
}

// checkSameAs: a watch narrowed to key saw exactly the key's changes the
// whole feed (all) has, in the same order.
func (w *watchReport) checkSameAs(all *watchReport, key string) {
	got, want := w.kv[key], all.kv[key]
	if len(got) != len(want) {
		w.violation("the watch of %s saw %d changes, the whole feed has %d of it", key, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			w.violation("the watch of %s: change %d is %+v, the whole feed's %+v", key, i, got[i], want[i])
			return
		}
	}
	w.checkedPuts = len(got)
}

// checkKVPuts: each put in the feed once at most, acknowledged ones once,
// with their revision, in real-time order; none that no client wrote.
func (w *watchReport) checkKVPuts(ops []porcupine.Operation) {
	type seen struct {
		key string
		at  int // index in the key's changes
		rev uint64
		n   int
	}
	feed := map[string]*seen{} // value → where the feed has it
	for key, changes := range w.kv {
		for i, c := range changes {
			if c.kind != "put" {
				continue
			}
			if s := feed[c.value]; s != nil {
				s.n++
				continue
			}
			feed[c.value] = &seen{key: key, at: i, rev: c.rev, n: 1}
		}
	}
	written := map[string]bool{}
	var acked []porcupine.Operation
	for _, op := range ops {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.Op != kvPut {
			continue
		}
		written[in.Value] = true
		s := feed[in.Value]
		switch {
		case out.Out == outOK && s == nil:
			w.violation("acknowledged put(%s,%s)@%d is not in the feed", in.Key, in.Value, out.Revision)
		case out.Out == outOK && s.rev != out.Revision:
			w.violation("acknowledged put(%s,%s)@%d is in the feed at revision %d", in.Key, in.Value, out.Revision, s.rev)
		case (out.Out == outRefused || out.Out == outNotFound) && s != nil:
			w.violation("put(%s,%s) answered %s is in the feed", in.Key, in.Value, out.Out)
		case s != nil && s.n > 1:
			w.violation("put(%s,%s) is in the feed %d times", in.Key, in.Value, s.n)
		}
		if out.Out == outOK && s != nil {
			w.checkedPuts++
			acked = append(acked, op)
		}
	}
	for v, s := range feed {
		if !written[v] {
			w.violation("the feed has put(%s,%s) that no client wrote", s.key, v)
		}
	}
	for _, a := range acked {
		for _, b := range acked {
			ai, bi := a.Input.(kvInput), b.Input.(kvInput)
			if ai.Key == bi.Key && a.Return < b.Call && feed[ai.Value].at > feed[bi.Value].at {
				w.violation("put(%s,%s) was acknowledged before put(%s,%s) was sent, but the feed has it after", ai.Key, ai.Value, bi.Key, bi.Value)
			}
		}
	}
}

// checkKVDeletes: a key's deletes in the feed are between its acknowledged
// deletes and those plus the ones of unknown outcome.
func (w *watchReport) checkKVDeletes(ops []porcupine.Operation) {
	acked, maybe := map[string]int{}, map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		if in.Op != kvDelete {
			continue
		}
		switch out.Out {
		case outOK:
			acked[in.Key]++
		case outUnknown:
			maybe[in.Key]++
		}
	}
	for _, key := range kvKeys {
		n := 0
		for _, c := range w.kv[key] {
			if c.kind == "delete" {
				n++
			}
		}
		if n < acked[key] || n > acked[key]+maybe[key] {
			w.violation("key %s: %d deletes in the feed, %d acknowledged and %d of unknown outcome", key, n, acked[key], maybe[key])
		}
	}
}

// checkSubs: the feed of a channel's subscribers holds at least what the
// acknowledged changes changed, and replays to the final list.
func (w *watchReport) checkSubs(ops []porcupine.Operation, final map[string]uint8) {
	puts, dels := map[string]int{}, map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(subInput), op.Output.(subOutput)
		if out.Out != outOK {
			continue
		}
		switch in.Op {
		case subAdd:
			puts[in.Channel] += out.Changed
		case subRemove:
			dels[in.Channel] += out.Changed
		case subDelete:
			dels[in.Channel]++
		}
	}
	for ch, want := range final {
		members := map[string]bool{}
		gotPuts, gotDels := 0, 0
		for _, c := range w.subs[ch] {
			switch c.kind {
			case "put":
				members[c.uid] = true
				gotPuts++
			case "delete":
				delete(members, c.uid)
				gotDels++
			case "clear":
				clear(members)
			}
		}
		var uids []string
		for u := range members {
			uids = append(uids, u)
		}
		got, foreign := uidMask(uids)
		if got != want || foreign {
			w.violation("the feed of channel %s replays to %s; the final list is %s", ch, uidList(got), uidList(want))
		}
		if gotPuts < puts[ch] || gotDels < dels[ch] {
			w.violation("channel %s: the feed has %d puts and %d deletes of subscribers; acknowledged changes made %d and %d", ch, gotPuts, gotDels, puts[ch], dels[ch])
		}
	}
}
