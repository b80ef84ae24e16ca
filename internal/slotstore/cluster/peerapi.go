package cluster

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/meta"
)

// Peer RPC: HTTP on the node's own peer listener, binary bodies (the codec of
// package meta), errors as a small JSON envelope. Every request carries the
// cluster secret (compared in constant time) and its remaining time budget;
// the server derives its context from that budget, so no peer call outlives
// its caller. A node serves at most 4×MaxPeerInFlight peer requests at once
// and answers busy past that. A forwarded request is served locally or
// refused with a hint — never forwarded again (at most one hop).
const (
	hdrSecret    = "X-Slotmeta-Secret"
	hdrTimeoutMs = "X-Slotmeta-Timeout-Ms"
	hdrConsist   = "X-Slotmeta-Consistency"
	hdrGroup     = "X-Slotmeta-Group" // propose to this group, not the one owning the slot
	maxPeerTime  = 60 * time.Second
	peerPrefix   = "/peer/v1/"
)

// peerError is the JSON error envelope of peer RPC.
type peerError struct {
	Code          slotstore.Code         `json:"code"`
	Message       string                 `json:"message"`
	LeaderHint    slotstore.NodeID       `json:"leader_hint,omitempty"`
	LeaderTerm    uint64                 `json:"leader_term,omitempty"`
	RouteRevision uint64                 `json:"route_revision,omitempty"`
	RetryAfterMs  int64                  `json:"retry_after_ms,omitempty"`
	Details       []slotstore.FieldError `json:"details,omitempty"`
}

func (n *Node) peerHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+peerPrefix+"propose", n.peerAuth(n.servePeerPropose))
	mux.HandleFunc("POST "+peerPrefix+"propose-batch", n.peerAuth(n.servePeerProposeBatch))
	mux.HandleFunc("POST "+peerPrefix+"read", n.peerAuth(n.servePeerRead))
	mux.HandleFunc("GET "+peerPrefix+"leaders", n.peerAuth(n.servePeerLeaders))
	mux.HandleFunc("GET "+peerPrefix+"applied", n.peerAuth(n.servePeerApplied))
	mux.HandleFunc("GET "+peerPrefix+"status", n.peerAuth(n.servePeerStatus))
	mux.HandleFunc("GET "+peerPrefix+"groups", n.peerAuth(n.servePeerGroups))
	mux.HandleFunc("GET "+peerPrefix+"health", n.peerAuth(n.servePeerHealth))
	mux.HandleFunc("POST "+peerPrefix+"transfer", n.peerAuth(n.servePeerTransfer))
	mux.HandleFunc("POST "+peerPrefix+"membership", n.peerAuth(n.servePeerMembership))
	return mux
}

// peerAuth checks the secret and the time budget, bounds concurrency, and
// runs h with a context that ends with the caller's budget.
func (n *Node) peerAuth(h func(ctx context.Context, w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(hdrSecret)), []byte(n.cfg.ClusterSecret)) != 1 {
			writePeerError(w, http.StatusUnauthorized, &slotstore.Error{Code: slotstore.CodeUnauthenticated, Message: "missing or wrong cluster secret"})
			return
		}
		ms, err := strconv.ParseInt(r.Header.Get(hdrTimeoutMs), 10, 64)
		if err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > maxPeerTime {
			writePeerError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "peer request needs %s in 1..%d", hdrTimeoutMs, maxPeerTime.Milliseconds()))
			return
		}
		select {
		case n.peerSlots <- struct{}{}:
			defer func() { <-n.peerSlots }()
		default:
			writePeerError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeBusy,
				Message: "node is serving its bound of peer requests", RetryAfter: 100 * time.Millisecond})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), time.Duration(ms)*time.Millisecond)
		defer cancel()
		r.Body = http.MaxBytesReader(w, r.Body, meta.MaxEntryBytes)
		h(ctx, w, r)
	}
}

// toPeerError is err as the envelope peer RPC sends.
func toPeerError(err error) peerError {
	e := slotstore.AsError(err)
	return peerError{Code: e.Code, Message: e.Message, LeaderHint: e.LeaderHint, LeaderTerm: e.LeaderTerm,
		RouteRevision: e.RouteRevision, RetryAfterMs: e.RetryAfter.Milliseconds(), Details: e.Details}
}

// err is the envelope as the error it carries.
func (pe peerError) err() *slotstore.Error {
	return &slotstore.Error{Code: pe.Code, Message: pe.Message, LeaderHint: pe.LeaderHint, LeaderTerm: pe.LeaderTerm,
		RouteRevision: pe.RouteRevision, RetryAfter: time.Duration(pe.RetryAfterMs) * time.Millisecond, Details: pe.Details}
}

func writePeerError(w http.ResponseWriter, status int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(toPeerError(err))
}

func setRouteHeaders(h http.Header, r slotstore.Route) {
	h.Set("X-Hash-Slot", strconv.FormatUint(uint64(r.HashSlot), 10))
	h.Set("X-Slot-Group", strconv.FormatUint(uint64(r.GroupID), 10))
	h.Set("X-Leader-Node", strconv.FormatUint(uint64(r.LeaderNodeID), 10))
	h.Set("X-Leader-Term", strconv.FormatUint(r.LeaderTerm, 10))
	h.Set("X-Config-Epoch", strconv.FormatUint(r.ConfigEpoch, 10))
	h.Set("X-Route-Revision", strconv.FormatUint(r.RouteRevision, 10))
}

func routeFromHeaders(h http.Header) slotstore.Route {
	u := func(k string) uint64 { v, _ := strconv.ParseUint(h.Get(k), 10, 64); return v }
	return slotstore.Route{HashSlot: slotstore.HashSlot(u("X-Hash-Slot")), GroupID: slotstore.GroupID(u("X-Slot-Group")),
		LeaderNodeID: slotstore.NodeID(u("X-Leader-Node")), LeaderTerm: u("X-Leader-Term"),
		ConfigEpoch: u("X-Config-Epoch"), RouteRevision: u("X-Route-Revision")}
}

func (n *Node) servePeerPropose(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writePeerError(w, http.StatusRequestEntityTooLarge, slotstore.Wrap(slotstore.CodePayloadTooLarge, err, "peer request body"))
		return
	}
	cmd, err := meta.DecodeCommand(body)
	if err != nil {
		writePeerError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable command"))
		return
	}
	g, _ := strconv.ParseUint(r.Header.Get(hdrGroup), 10, 32)
	if _, slotCmd := cmd.(meta.SlotCommand); slotCmd && g == 0 {
		writePeerError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "a hash-slot migration command needs %s", hdrGroup))
		return
	}
	res, route, err := n.proposeLocal(ctx, cmd, slotstore.GroupID(g))
	setRouteHeaders(w.Header(), route)
	if err != nil {
		writePeerError(w, http.StatusServiceUnavailable, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(meta.EncodeResult(&res))
}

func (n *Node) servePeerRead(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writePeerError(w, http.StatusRequestEntityTooLarge, slotstore.Wrap(slotstore.CodePayloadTooLarge, err, "peer request body"))
		return
	}
	q, err := meta.DecodeQuery(body)
	if err != nil {
		writePeerError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable query"))
		return
	}
	c := meta.Linearizable
	if r.Header.Get(hdrConsist) == "local" {
		c = meta.Local
	}
	v, info, err := n.readLocal(ctx, q, c)
	setRouteHeaders(w.Header(), info.Route)
	w.Header().Set("X-Served-By", strconv.FormatUint(uint64(info.ServedBy), 10))
	w.Header().Set("X-Applied-Index", strconv.FormatUint(info.AppliedIndex, 10))
	if err != nil {
		writePeerError(w, http.StatusServiceUnavailable, err)
		return
	}
	ans, err := meta.EncodeAnswer(v)
	if err != nil {
		writePeerError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(ans)
}

// leaderView is one node's live view of one group it replicates.
type leaderView struct {
	Group  slotstore.GroupID `json:"group"`
	Leader slotstore.NodeID  `json:"leader"`
	Term   uint64            `json:"term"`
}

// localLeaderViews reads the live leader of every local replica.
func (n *Node) localLeaderViews() []leaderView {
	st := n.ctrl.Load()
	var out []leaderView
	for id := range *n.groups.Load() {
		leader, term, valid, err := n.nh.GetLeaderID(controller.ShardOf(id))
		if err != nil || !valid || leader == 0 {
			continue
		}
		grp, ok := st.Groups[id]
		if !ok {
			continue
		}
		if node, ok := grp.NodeOfReplica(leader); ok {
			out = append(out, leaderView{Group: id, Leader: node, Term: term})
		}
	}
	return out
}

// servePeerApplied answers the applied index of this node's replica of
// the group named by ?group= (a leader transfer waits for its target).
func (n *Node) servePeerApplied(_ context.Context, w http.ResponseWriter, r *http.Request) {
	g, err := strconv.ParseUint(r.URL.Query().Get("group"), 10, 32)
	lg := (*n.groups.Load())[slotstore.GroupID(g)]
	if err != nil || lg == nil || lg.sm.Load() == nil {
		writePeerError(w, http.StatusNotFound, slotstore.Errorf(slotstore.CodeNotFound, "no replica of group %q here", r.URL.Query().Get("group")))
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(strconv.AppendUint(nil, lg.sm.Load().AppliedIndex(), 10))
}

func (n *Node) servePeerLeaders(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(n.localLeaderViews())
}
