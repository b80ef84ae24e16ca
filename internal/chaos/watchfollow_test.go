package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// A watchFollower follows the change feed of every hash slot (GET
// /v1/watch over all resources, no filter) through the whole schedule, as
// a client of the feed is told to: it starts linearizably before the
// workload writes, and after every disconnect it resumes from the id of
// the last event it got — on a node picked at random, so a resume lands on
// another node more often than not. It drops each stream after a random
// 0.2–1.5 s (and when one is silent for a second: progress marks come
// every 100 ms), so a schedule has dozens of resumes, across leader
// changes, restarts, partitions, snapshot installs, slot moves, splits and
// merges. A node's restart cuts the streams it serves (as a process's death
// does).
//
// It checks each event as it comes (watchReport.violations):
//
//   - per slot, a change event's seq is the slot's position plus its number
//     of changes (nothing is filtered, so every numbered change is
//     delivered): a lower seq is a repeat or a rewind, a higher one a gap;
//   - every event's id (the cursor) is the positions delivered so far —
//     never ahead (a resume from it would skip changes), never behind;
//
// and keeps the changes of the workload's keys and channels for the checks
// against the histories at the end (watchcheck_test.go).
type watchFollower struct {
	tc  *testCluster
	rng *rand.Rand
	rep *watchReport
	// key, if set, narrows the watch to that business key (resource=kv):
	// its slot only, the hub's filter skipping the slot's other changes,
	// so positions move past changes never delivered — the checks are then
	// that nothing repeats or rewinds, and (at the end) that it saw
	// exactly the key's changes the whole feed has.
	key string

	pos     watch.Cursor // what was delivered: the last id, checked
	started bool         // pos is set (the first stream answered)
	node    int          // the node asked
	last    int          // the node of the last stream that answered (-1 none)

	mu     sync.Mutex
	cutOn  int // node index of the open stream (-1 none)
	cancel context.CancelFunc
	// caught is the positions it has delivered, for waitCaughtUp.
	caught watch.Cursor
}

// watchResourcesAll is every resource with rows in slots.
const watchResourcesAll = "users,devices,plugins,memberships,cmd_bindings,system_uids,kv,channels,runtime,subscribers,denylist,allowlist"

// feedEvent is the data of a change event.
type feedEvent struct {
	HashSlot slotstore.HashSlot `json:"hash_slot"`
	Seq      uint64             `json:"seq"`
	Changes  []struct {
		Kind     string `json:"kind"`
		Resource string `json:"resource"`
		Key      struct {
			UID         string `json:"uid"`
			Key         string `json:"key"`
			ChannelType uint8  `json:"channel_type"`
			ChannelID   string `json:"channel_id"`
		} `json:"key"`
		Value json.RawMessage `json:"value"`
	} `json:"changes"`
}

func newWatchFollower(tc *testCluster, seed int64, key string) *watchFollower {
	f := &watchFollower{tc: tc, rng: rand.New(rand.NewSource(seed*7 + 1)), rep: newWatchReport(), key: key, cutOn: -1, node: -1, last: -1}
	prev := tc.cutStreams
	tc.cutStreams = func(i int) {
		if prev != nil {
			prev(i)
		}
		f.cut(i)
	}
	return f
}

// query is the watch's resources and filter.
func (f *watchFollower) query() string {
	if f.key != "" {
		return "resource=kv&key=" + url.QueryEscape(f.key)
	}
	return "resource=" + watchResourcesAll
}

// cut ends the stream open on node i, if any (tc.restart calls it).
func (f *watchFollower) cut(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cutOn == i && f.cancel != nil {
		f.cancel()
		f.rep.cutByRestart++
	}
}

// start opens the first stream, linearizably, and returns once it has
// answered (its first progress mark is the feed's start): every write
// acknowledged after start returns is in the feed.
func (f *watchFollower) start(t testing.TB) {
	testutil.WaitFor(t, 15*time.Second, 50*time.Millisecond, func() (bool, string) {
		f.node = f.rng.Intn(f.tc.size())
		ok := f.stream(context.Background(), "&linearizable=true", 0)
		return ok && f.started, "no node started a linearizable watch"
	})
}

// run follows the feed until ctx ends, resuming after every disconnect.
func (f *watchFollower) run(ctx context.Context) {
	for ctx.Err() == nil {
		f.node = f.rng.Intn(f.tc.size())
		life := 200*time.Millisecond + time.Duration(f.rng.Int63n(int64(1300*time.Millisecond)))
		if !f.stream(ctx, "", life) {
			select { // refused or unreachable: a short pause, then another node
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// stream reads one stream from f.node for at most life (0: until its first
// progress mark). It reports whether the node answered with a stream.
func (f *watchFollower) stream(parent context.Context, extra string, life time.Duration) bool {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if life > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, life)
		defer stop()
	}
	base := f.tc.url(f.node)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/watch?"+f.query()+"&progress_interval_ms=100"+extra, nil)
	if err != nil {
		f.rep.violation("watch request: %v", err)
		return false
	}
	if f.started {
		req.Header.Set("Last-Event-ID", f.pos.String())
	}
	f.mu.Lock()
	f.cutOn, f.cancel = f.node, cancel
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.cutOn, f.cancel = -1, nil
		f.mu.Unlock()
	}()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.rep.refused["no answer"]++
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		code := fmt.Sprint(resp.StatusCode)
		if resp.StatusCode == http.StatusGone {
			f.rep.violation("n%d answered 410 compacted to a resume", f.node+1)
		} else if resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusTooManyRequests {
			f.rep.violation("n%d answered %d to a watch", f.node+1, resp.StatusCode)
		}
		f.rep.refused[code]++
		return false
	}
	f.rep.streams++
	if f.last >= 0 && f.last != f.node {
		f.rep.elsewhere++
	}
	f.last = f.node
	events := testutil.SSEEvents(resp.Body)
	defer func() {
		cancel()
		for range events { // the reader ends once the body is closed
		}
	}()
	silence := time.NewTimer(time.Second)
	defer silence.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return true
			}
			silence.Reset(time.Second)
			if !f.event(ev) || life == 0 && f.started {
				return true
			}
		case <-silence.C:
			f.rep.silent++
			return true
		}
	}
}

// event checks and keeps one event; false ends the stream (an error event,
// or one that cannot be followed).
func (f *watchFollower) event(ev testutil.SSEEvent) bool {
	id, err := watch.ParseCursor(ev.ID)
	if err != nil {
		f.rep.violation("n%d: %s event with id %q: %v", f.node+1, ev.Event, ev.ID, err)
		return false
	}
	if !f.started {
		if ev.Event != "progress" {
			f.rep.violation("n%d: a watch began with a %s event", f.node+1, ev.Event)
			return false
		}
		f.pos, f.started = id, true
		f.publish()
		return true
	}
	switch ev.Event {
	case "progress":
		f.rep.progress++
		f.sameAsDelivered(id, "progress mark")
		f.publish()
		return true
	case "error":
		var body struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(ev.Data), &body)
		f.rep.errors[body.Error.Code]++
		if body.Error.Code == string(slotstore.CodeCompacted) {
			f.rep.violation("n%d: compacted while following", f.node+1)
		}
		f.sameAsDelivered(id, "error event "+body.Error.Code)
		return false
	case "change":
	default:
		f.rep.violation("n%d: unknown event %q", f.node+1, ev.Event)
		return false
	}
	var fe feedEvent
	if err := json.Unmarshal([]byte(ev.Data), &fe); err != nil || len(fe.Changes) == 0 {
		f.rep.violation("n%d: change event %q: %v", f.node+1, ev.Data, err)
		return false
	}
	s := fe.HashSlot
	pos := f.pos.Seq(s)
	switch want := pos + uint64(len(fe.Changes)); {
	case !f.pos.Covers(s):
		f.rep.violation("n%d: a change of slot %d the watch does not cover", f.node+1, s)
		return false
	case f.key != "" && fe.Seq <= pos:
		f.rep.violation("n%d: slot %d repeated or rewound: a change at seq %d after position %d", f.node+1, s, fe.Seq, pos)
	case f.key != "": // filtered: a later seq is the changes skipped
	case fe.Seq < want:
		f.rep.violation("n%d: slot %d repeated or rewound: %d changes ending at seq %d after position %d", f.node+1, s, len(fe.Changes), fe.Seq, pos)
	case fe.Seq > want:
		f.rep.violation("n%d: slot %d gap: %d changes ending at seq %d after position %d", f.node+1, s, len(fe.Changes), fe.Seq, pos)
	}
	f.rep.changeEvents++
	f.rep.changes += len(fe.Changes)
	f.keep(fe)
	f.pos.Set(s, fe.Seq)
	f.sameAsDelivered(id, fmt.Sprintf("change event of slot %d", s))
	f.publish()
	return true
}

// sameAsDelivered checks an event's id against the positions delivered
// (filtered: that it never goes back, and takes it: a filtered watch's
// position moves past what it does not want).
func (f *watchFollower) sameAsDelivered(id watch.Cursor, what string) {
	if f.key != "" {
		for _, s := range f.pos.Slots() {
			if id.Seq(s) < f.pos.Seq(s) {
				f.rep.violation("n%d: %s: id at seq %d of slot %d, behind the %d delivered", f.node+1, what, id.Seq(s), s, f.pos.Seq(s))
			}
			f.pos.Set(s, max(id.Seq(s), f.pos.Seq(s)))
		}
		return
	}
	for _, s := range f.pos.Slots() {
		if got, want := id.Seq(s), f.pos.Seq(s); got != want {
			dir := "ahead of"
			if got < want {
				dir = "behind"
			}
			f.rep.violation("n%d: %s: id at seq %d of slot %d, %s the %d delivered", f.node+1, what, got, s, dir, want)
			f.pos.Set(s, max(got, want)) // report once, go on from the later
		}
	}
}

// publish makes the delivered positions visible to waitCaughtUp.
func (f *watchFollower) publish() {
	f.mu.Lock()
	f.caught = f.pos
	f.mu.Unlock()
}

// reached reports whether every slot's delivered position is at least
// target's, and the first slot that is not.
func (f *watchFollower) reached(target watch.Cursor) (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range target.Slots() {
		if f.caught.Covers(s) && f.caught.Seq(s) < target.Seq(s) {
			return false, fmt.Sprintf("slot %d delivered to seq %d of %d", s, f.caught.Seq(s), target.Seq(s))
		}
	}
	return true, ""
}

// keep records the changes the end checks compare with the histories: the
// workload's business keys and its channels' subscribers.
func (f *watchFollower) keep(fe feedEvent) {
	for _, c := range fe.Changes {
		switch {
		case c.Resource == "kv" && strings.HasPrefix(c.Key.Key, "fill-"):
		case c.Resource == "kv":
			kc := kvChange{kind: c.Kind}
			if c.Kind == "put" {
				var v kvJSON
				if err := json.Unmarshal(c.Value, &v); err != nil || v.Key != c.Key.Key {
					f.rep.violation("kv change of %q with value %s", c.Key.Key, c.Value)
				}
				kc.value, kc.rev = v.Value, v.Revision
			}
			f.rep.kv[c.Key.Key] = append(f.rep.kv[c.Key.Key], kc)
		case c.Resource == "subscribers" && c.Key.ChannelType == subChannelType:
			f.rep.subs[c.Key.ChannelID] = append(f.rep.subs[c.Key.ChannelID], subChange{kind: c.Kind, uid: c.Key.UID})
		}
	}
}
