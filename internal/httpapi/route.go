package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// Response headers of keyed requests (docs/design.md §3, §6). X-Route-Revision is
// also a request header: the client's fence.
const (
	hdrHashSlot      = "X-Hash-Slot"
	hdrSlotGroup     = "X-Slot-Group"
	hdrLeaderNode    = "X-Leader-Node"
	hdrLeaderTerm    = "X-Leader-Term"
	hdrConfigEpoch   = "X-Config-Epoch"
	hdrRouteRevision = "X-Route-Revision"
	hdrAppliedIndex  = "X-Applied-Index"
	hdrServedBy      = "X-Served-By"
	hdrReplayed      = "Idempotent-Replayed"
)

// setUint sets header name, one of the canonical hdr* constants, to v: by
// direct assignment, sparing the canonicalization of h.Set on every keyed
// response (TestHeaderNamesAreCanonical).
func setUint(h http.Header, name string, v uint64) {
	h[name] = []string{strconv.FormatUint(v, 10)}
}

// setRouteHeaders describes rt in h. What rt does not know is removed rather
// than shown as 0: a group of 0 is none, and a leader of 0 is unknown.
func setRouteHeaders(h http.Header, rt slotstore.Route) {
	setOrDel := func(name string, v uint64, known bool) {
		if known {
			setUint(h, name, v)
		} else {
			delete(h, name)
		}
	}
	setOrDel(hdrHashSlot, uint64(rt.HashSlot), true)
	setOrDel(hdrSlotGroup, uint64(rt.GroupID), rt.GroupID != 0)
	setOrDel(hdrConfigEpoch, rt.ConfigEpoch, rt.GroupID != 0)
	setOrDel(hdrLeaderNode, uint64(rt.LeaderNodeID), rt.LeaderNodeID != 0)
	setOrDel(hdrLeaderTerm, rt.LeaderTerm, rt.LeaderNodeID != 0)
	setOrDel(hdrRouteRevision, rt.RouteRevision, rt.RouteRevision != 0)
}

// snapshot returns the backend's routing snapshot.
func (a *api) snapshot() (*routing.Snapshot, error) {
	s := a.be.Routes()
	if s == nil {
		return nil, slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing snapshot yet")
	}
	return s, nil
}

// target is a keyed request: its route key and the client's fence.
type target struct {
	key   string
	fence fence
}

// begin routes t on the current snapshot: it sets the route headers and
// refuses a client whose X-Route-Revision is older than the snapshot's.
// A route that is not ready is not refused here; the backend answers it.
func (a *api) begin(w http.ResponseWriter, t target) error {
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	hs := slotstore.HashSlotOfString(t.key)
	rt, _ := snap.ResolveSlot(hs)
	rt.HashSlot, rt.RouteRevision = hs, snap.Revision()
	setRouteHeaders(w.Header(), rt)
	if t.fence.set && t.fence.revision < snap.Revision() {
		return &slotstore.Error{
			Code:          slotstore.CodeRouteRevisionMismatch,
			Message:       fmt.Sprintf("route revision %d is older than this node's %d; refresh routes and retry", t.fence.revision, snap.Revision()),
			RouteRevision: snap.Revision(),
		}
	}
	return nil
}

// propose replicates cmd for t. It returns the command's result, or an error
// for a refused request or a failed or refused command. A replayed answer is
// marked with Idempotent-Replayed, whatever its outcome.
func (a *api) propose(w http.ResponseWriter, r *http.Request, t target, idemKey string, cmd meta.Command) (meta.Result, error) {
	if err := a.begin(w, t); err != nil {
		return meta.Result{}, err
	}
	cmd.Head().IdempotencyKey = idemKey
	res, rt, err := a.be.Propose(r.Context(), cmd)
	if rt.GroupID != 0 {
		setRouteHeaders(w.Header(), rt)
	}
	if err != nil {
		return res, err
	}
	if res.Replayed {
		w.Header().Set(hdrReplayed, "true")
	}
	return res, res.Err()
}

// writeBody reads what a write with a body starts with: the write
// headers, then the body into dst.
func (a *api) writeBody(w http.ResponseWriter, r *http.Request, dst any) (idemKey string, f fence, err error) {
	if idemKey, f, err = writeHeaders(r); err != nil {
		return "", fence{}, err
	}
	return idemKey, f, a.decode(w, r, dst)
}

// remove answers a delete: the write headers read, cmd proposed for key,
// 204 No Content.
func (a *api) remove(w http.ResponseWriter, r *http.Request, key string, cmd meta.Command) error {
	idemKey, f, err := writeHeaders(r)
	if err != nil {
		return err
	}
	res, err := a.propose(w, r, target{key, f}, idemKey, cmd)
	if err != nil {
		return err
	}
	if res.Revision != 0 {
		w.Header().Set(hdrRevision, strconv.FormatUint(res.Revision, 10))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hdrRevision carries the revision a change without a body was applied at.
const hdrRevision = "X-Revision"

// read answers q for t as the type q declares and says who served it at
// which applied index. A "none" answer is A's zero (a nil pointer).
func read[A any](a *api, w http.ResponseWriter, r *http.Request, t target, c meta.Consistency, q meta.For[A]) (A, error) {
	var zero A
	if err := a.begin(w, t); err != nil {
		return zero, err
	}
	ans, info, err := meta.Read(r.Context(), a.be, q, c)
	setReadHeaders(w.Header(), info)
	return ans, err
}

// setReadHeaders describes who served a read.
func setReadHeaders(h http.Header, info meta.ReadInfo) {
	if info.Route.GroupID != 0 {
		setRouteHeaders(h, info.Route)
	}
	if info.ServedBy != 0 {
		setUint(h, hdrServedBy, uint64(info.ServedBy))
		setUint(h, hdrAppliedIndex, info.AppliedIndex)
	}
}

// internalf reports a backend answer that breaks the Backend contract.
func internalf(format string, args ...any) error {
	return slotstore.Errorf(slotstore.CodeInternal, format, args...)
}
