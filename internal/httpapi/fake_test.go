package httpapi

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
	"github.com/slotmeta/slotmeta/internal/testkit/operatortest"
)

// fakeBackend is an in-memory Backend: one map per entity, one revision
// counter, idempotency records, and a real routing.Router. It records every
// call so tests can assert that a rejected request never reached it.
type fakeBackend struct {
	t      testing.TB
	node   slotstore.NodeID
	router *routing.Router
	// The operator's side is the shared fake (node 2 of its cluster),
	// which records every call, this fake's own included.
	*operatortest.Fake

	mu       sync.Mutex
	rev      uint64
	now      int64
	users    map[string]*meta.User
	kvs      map[string]*meta.KV
	idem     map[string]meta.Result
	proposed []meta.Command
	scans    []meta.ScanUsers
	batches  []meta.GetRows // the batch reads asked, in order

	// Batch reads: keys answered "wrong group" (their slot moved) once, or
	// every time; groups whose reads fail.
	movedOnce, movedAlways map[string]bool
	groupErr               map[slotstore.GroupID]error
	batchRoom              int // keys one batch answer reads at most (0: all)
	// Batch writes: slots whose part of a SlotWrites answers wrong_group
	// (their slot left the group) once.
	slotMovedOnce map[slotstore.HashSlot]bool

	changes *fakeChangeLog // the change feed (Watches), made on first use

	// Failure injection.
	proposeErr error
	readErr    error
	readyErr   error
	panicMsg   string
	blockRead  bool // Read waits for its context to end
}

// newFake returns a backend whose table splits the hash slots into groups
// groups (revision 1), each led by node 1 at term 7 with config epoch 3.
func newFake(t testing.TB, groups int) *fakeBackend {
	t.Helper()
	tbl, err := routing.InitialTable(groups)
	if err != nil {
		t.Fatal(err)
	}
	return newFakeTable(t, tbl)
}

func newFakeTable(t testing.TB, tbl *routing.Table) *fakeBackend {
	f := &fakeBackend{
		t: t, node: 2, router: routing.NewRouter(), Fake: operatortest.New(2),
		users: map[string]*meta.User{}, kvs: map[string]*meta.KV{}, idem: map[string]meta.Result{},
		now: 1_700_000_000_000,
	}
	f.router.SetTable(tbl)
	for _, g := range tbl.GroupIDs() {
		f.router.SetConfigEpoch(g, 3)
		f.router.SetLeader(g, 1, 7)
	}
	return f
}

func (f *fakeBackend) Routes() *routing.Snapshot { f.record("Routes"); return f.router.Load() }

// Operator is the shared fake.
func (f *fakeBackend) Operator() slotstore.Operator { return f.Fake }

// Watches serves from a real hub over the fake's change log (watch_test.go).
func (f *fakeBackend) Watches() watch.Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changes == nil {
		f.changes = newFakeChangeLog(f.t, watch.Config{MaxSubscribers: 4, Buffer: 64})
	}
	return watch.Source{Hub: f.changes.hub, Log: f.changes, RoutesChanged: f.router.Changed}
}

// record notes a call of the data path beside the operator's.
func (f *fakeBackend) record(call string) { f.Record(call) }

func (f *fakeBackend) count(call string) int { return f.Count(call) }

func (f *fakeBackend) Ready() error { f.record("Ready"); return f.readyErr }

func (f *fakeBackend) RegisterNode(_ context.Context, n slotstore.NodeInfo, _ slotstore.Version) (slotstore.NodeInfo, error) {
	f.record("RegisterNode")
	n.State = slotstore.NodeActive
	return n, nil
}

func (f *fakeBackend) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	f.record("Propose")
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	rt, err := f.router.Load().Resolve([]byte(cmd.RouteKey()))
	if err != nil {
		return meta.Result{}, rt, err
	}
	if f.proposeErr != nil {
		return meta.Result{}, rt, f.proposeErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := cmd.Head()
	h.HashSlot, h.TimeMs = rt.HashSlot, f.now
	f.proposed = append(f.proposed, cmd)
	if sw, ok := cmd.(*meta.SlotWrites); ok {
		return f.applyParts(sw), rt, nil
	}
	if h.IdempotencyKey != "" {
		if res, ok := f.idem[h.IdempotencyKey]; ok {
			res.Replayed = true
			return res, rt, nil
		}
	}
	res := f.apply(cmd)
	if h.IdempotencyKey != "" {
		f.idem[h.IdempotencyKey] = res
	}
	return res, rt, nil
}

// applyParts applies each part of a SlotWrites as a lone WriteKVs (its
// own idempotency record), a slot of slotMovedOnce answering wrong_group.
func (f *fakeBackend) applyParts(sw *meta.SlotWrites) meta.Result {
	out := make([]meta.Result, len(sw.Parts))
	for i := range sw.Parts {
		p := &sw.Parts[i]
		if f.slotMovedOnce[p.HashSlot] {
			delete(f.slotMovedOnce, p.HashSlot)
			out[i] = fail(slotstore.CodeWrongGroup, "hash slot %d moved", p.HashSlot)
			continue
		}
		if res, ok := f.idem[p.IdempotencyKey]; ok && p.IdempotencyKey != "" {
			res.Replayed = true
			out[i] = res
			continue
		}
		out[i] = f.apply(p)
		if p.IdempotencyKey != "" {
			f.idem[p.IdempotencyKey] = out[i]
		}
	}
	return meta.Result{Value: meta.EncodeResults(out)}
}

func fail(code slotstore.Code, format string, args ...any) meta.Result {
	return meta.Result{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (f *fakeBackend) apply(cmd meta.Command) meta.Result {
	switch c := cmd.(type) {
	case *meta.CreateUser:
		if _, ok := f.users[c.User.UID]; ok {
			return fail(slotstore.CodeConflict, "user %q exists", c.User.UID)
		}
		return f.putUser(c.User, f.now)
	case *meta.PutUser:
		created := f.now
		if old, ok := f.users[c.User.UID]; ok {
			created = old.CreatedAtMs
		}
		return f.putUser(c.User, created)
	case *meta.DeleteUser:
		if _, ok := f.users[c.UID]; !ok {
			return fail(slotstore.CodeNotFound, "user %q not found", c.UID)
		}
		delete(f.users, c.UID)
		f.rev++
		return meta.Result{Revision: f.rev}
	case *meta.PutKV:
		if res, ok := f.checkCond(c.Key, c.Cond); !ok {
			return res
		}
		f.rev++
		kv := &meta.KV{Key: c.Key, Value: c.Value, Revision: f.rev, CreateRevision: f.rev, UpdatedAtMs: f.now}
		if old, ok := f.kvs[c.Key]; ok {
			kv.CreateRevision = old.CreateRevision
		}
		f.kvs[c.Key] = kv
		return meta.Result{Revision: f.rev, Value: meta.EncodeKV(kv)}
	case *meta.DeleteKV:
		if res, ok := f.checkCond(c.Key, c.Cond); !ok {
			return res
		}
		if _, ok := f.kvs[c.Key]; !ok {
			return fail(slotstore.CodeNotFound, "key %q not found", c.Key)
		}
		delete(f.kvs, c.Key)
		f.rev++
		return meta.Result{Revision: f.rev}
	case *meta.WriteKVs:
		// All or none, as a group applies it (its conditions checked
		// against the rows before the batch: the fake does not chain them).
		out := &meta.KVWriteResults{Items: make([]meta.KVWriteResult, len(c.Ops))}
		failed := false
		for i, op := range c.Ops {
			if res, ok := f.checkCond(op.Key, op.Cond); !ok {
				out.Items[i] = meta.KVWriteResult{Code: res.Code, Message: res.Message}
				failed = true
			}
		}
		if failed {
			for i := range out.Items {
				if out.Items[i].Code == "" {
					out.Items[i].Code = slotstore.CodeAborted
				}
			}
			return meta.Result{Value: meta.EncodeKVWriteResults(out)}
		}
		f.rev++
		for i, op := range c.Ops {
			_, existed := f.kvs[op.Key]
			out.Items[i] = meta.KVWriteResult{Revision: f.rev, Existed: existed}
			if op.Delete {
				delete(f.kvs, op.Key)
			} else {
				f.kvs[op.Key] = &meta.KV{Key: op.Key, Value: op.Value, Revision: f.rev, CreateRevision: f.rev, UpdatedAtMs: f.now}
			}
		}
		return meta.Result{Revision: f.rev, Value: meta.EncodeKVWriteResults(out)}
	}
	// Resources the fake does not model answer as if the row were absent:
	// a valid client-visible outcome, so FuzzRequest's "no 5xx" holds for
	// every route (their behaviour is tested against real nodes in e2e).
	return fail(slotstore.CodeNotFound, "fake does not model %T", cmd)
}

func (f *fakeBackend) putUser(u meta.User, created int64) meta.Result {
	f.rev++
	u.CreatedAtMs, u.UpdatedAtMs, u.Revision = created, f.now, f.rev
	f.users[u.UID] = &u
	return meta.Result{Revision: f.rev, Value: meta.EncodeUser(&u)}
}

func (f *fakeBackend) checkCond(key string, c meta.Cond) (meta.Result, bool) {
	old, exists := f.kvs[key]
	ok := true
	switch c.Kind {
	case meta.CondIfRevision:
		ok = exists && old.Revision == c.Revision
	case meta.CondIfAbsent:
		ok = !exists
	case meta.CondIfExists:
		ok = exists
	}
	if !ok {
		return fail(slotstore.CodeFailedPrecondition, "precondition failed for %q", key), false
	}
	return meta.Result{}, true
}

func (f *fakeBackend) Read(ctx context.Context, q meta.Query, c meta.Consistency) (any, meta.ReadInfo, error) {
	f.record("Read")
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	snap := f.router.Load()
	rt, err := snap.ResolveSlot(q.RouteSlot())
	if err != nil {
		return nil, meta.ReadInfo{Route: rt}, err
	}
	if f.blockRead {
		<-ctx.Done()
		return nil, meta.ReadInfo{}, ctx.Err()
	}
	if f.readErr != nil {
		return nil, meta.ReadInfo{Route: rt}, f.readErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	info := meta.ReadInfo{ServedBy: f.node, AppliedIndex: f.rev, Route: rt}
	switch q := q.(type) {
	case *meta.GetUser:
		if u, ok := f.users[q.UID]; ok {
			cp := *u
			return &cp, info, nil
		}
		return (*meta.User)(nil), info, nil
	case *meta.GetKV:
		if kv, ok := f.kvs[q.Key]; ok {
			cp := *kv
			return &cp, info, nil
		}
		return nil, info, nil
	case *meta.ScanUsers:
		f.scans = append(f.scans, *q)
		return f.scan(snap.Table(), q), info, nil
	case *meta.GetRows:
		f.batches = append(f.batches, *q)
		if err := f.groupErr[rt.GroupID]; err != nil {
			return nil, info, err
		}
		out := &meta.RowBatch{Items: make([]meta.RowBatchItem, len(q.Keys))}
		for i, ref := range q.Keys {
			k := ref.Key
			switch {
			case f.batchRoom > 0 && i >= f.batchRoom:
				out.Items[i].State = meta.BatchNotRead
			case snap.Table().Group(slotstore.HashSlotOfString(k)) != rt.GroupID:
				f.t.Errorf("GetRows to group %d has key %q of group %d", rt.GroupID, k, snap.Table().Group(slotstore.HashSlotOfString(k)))
			case f.movedAlways[k] || f.movedOnce[k]:
				delete(f.movedOnce, k)
				out.Items[i].State = meta.BatchWrongGroup
			case q.Table == meta.TableKV && f.kvs[k] != nil:
				out.Items[i] = meta.RowBatchItem{State: meta.BatchFound, Row: meta.EncodeKV(f.kvs[k])}
			case q.Table == meta.TableUser && f.users[k] != nil:
				out.Items[i] = meta.RowBatchItem{State: meta.BatchFound, Row: meta.EncodeUser(f.users[k])}
			}
		}
		return out, info, nil
	}
	return nil, info, slotstore.Errorf(slotstore.CodeNotFound, "fake does not model %T", q)
}

// ReadRows reads each query as Read does, one after another.
func (f *fakeBackend) ReadRows(ctx context.Context, qs []*meta.GetRows, c meta.Consistency) []meta.RowsAnswer {
	out := make([]meta.RowsAnswer, len(qs))
	for i, q := range qs {
		out[i].Batch, _, out[i].Err = meta.Read(ctx, f, q, c)
	}
	return out
}

// scan answers ScanUsers like a group would: only if every hash slot of the
// range is owned by one group, in (slot, uid) order.
func (f *fakeBackend) scan(tbl *routing.Table, q *meta.ScanUsers) *meta.UserPage {
	for s := q.FromSlot; s <= q.ToSlot; s++ {
		if tbl.Group(s) != tbl.Group(q.FromSlot) {
			f.t.Errorf("ScanUsers %d-%d spans groups %d and %d", q.FromSlot, q.ToSlot, tbl.Group(q.FromSlot), tbl.Group(s))
		}
	}
	if q.Limit < 1 {
		f.t.Errorf("ScanUsers with limit %d", q.Limit)
	}
	var all []*meta.User
	for _, u := range f.users {
		s := slotstore.HashSlotOfString(u.UID)
		if s < q.FromSlot || s > q.ToSlot || (s == q.FromSlot && u.UID <= q.AfterUID) {
			continue
		}
		cp := *u
		all = append(all, &cp)
	}
	sortUsers(all)
	page := &meta.UserPage{Users: all}
	if len(all) > q.Limit {
		page.Users, page.More = all[:q.Limit], true
		last := page.Users[q.Limit-1]
		page.LastSlot, page.LastUID = slotstore.HashSlotOfString(last.UID), last.UID
	}
	return page
}

func sortUsers(us []*meta.User) {
	sort.Slice(us, func(i, j int) bool {
		si, sj := slotstore.HashSlotOfString(us[i].UID), slotstore.HashSlotOfString(us[j].UID)
		if si != sj {
			return si < sj
		}
		return us[i].UID < us[j].UID
	})
}

// newHandler builds the API over f with a private registry and a quiet logger.
func newHandler(t testing.TB, f *fakeBackend, opts ...func(*Config)) http.Handler {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{Backend: f, Registerer: reg, Gatherer: reg, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// do sends one request. headers are name, value pairs; a body without a
// Content-Type pair is sent as application/json.
func do(t testing.TB, h http.Handler, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Content-Type" {
			r.Header.Del("Content-Type")
		}
		r.Header.Add(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func encodeRaw(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
