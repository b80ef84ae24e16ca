package dispatch

import (
	"context"
	"net/http"
	"strconv"

	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The serving half of forwarding: what another node's dispatcher sends
// here (Propose, Read) is served by this node only — proposed if it leads
// the group, read from its replica — or refused with a hint, never
// forwarded again (at most one hop).

// Register registers the forwarding endpoints on the node's peer server.
func (d *Dispatcher) Register(s *peer.Server) {
	s.Handle(http.MethodPost, "propose", d.servePropose)
	s.Handle(http.MethodPost, "propose-batch", d.serveProposeBatch)
	s.Handle(http.MethodPost, "read", d.serveRead)
}

func (d *Dispatcher) servePropose(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	cmd, body, ok := peer.ReadRequest(w, r.Body, "command", meta.DecodeCommand)
	if !ok {
		return
	}
	g, _ := strconv.ParseUint(r.Header.Get(peer.HdrGroup), 10, 32)
	if _, slotCmd := cmd.(meta.SlotCommand); slotCmd && g == 0 {
		peer.WriteError(w, http.StatusBadRequest, slotstore.Errorf(slotstore.CodeInvalidArgument, "a hash-slot migration command needs %s", peer.HdrGroup))
		return
	}
	res, route, err := d.proposeLocal(ctx, cmd, body, slotstore.GroupID(g))
	d.servedWrite(ctx, r, cmd, &res, err)
	peer.SetRouteHeaders(w.Header(), route)
	if err != nil {
		peer.WriteError(w, http.StatusServiceUnavailable, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(meta.EncodeResult(&res))
}

func (d *Dispatcher) serveProposeBatch(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	peer.ServeProposeBatch(ctx, w, r, func(ctx context.Context, cmd meta.Command, enc []byte) (meta.Result, slotstore.Route, error) {
		res, route, err := d.proposeLocal(ctx, cmd, enc, 0)
		d.servedWrite(ctx, r, cmd, &res, err)
		return res, route, err
	})
}

// servedWrite tells the node of a write served for another node.
func (d *Dispatcher) servedWrite(ctx context.Context, r *http.Request, cmd meta.Command, res *meta.Result, err error) {
	if d.cfg.ServedWrite != nil {
		d.cfg.ServedWrite(ctx, r, cmd, res, err)
	}
}

func (d *Dispatcher) serveRead(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	q, _, ok := peer.ReadRequest(w, r.Body, "query", meta.DecodeQuery)
	if !ok {
		return
	}
	c := meta.Linearizable
	if r.Header.Get(peer.HdrConsistency) == "local" {
		c = meta.Local
	}
	v, info, err := d.ReadLocal(ctx, q, c)
	peer.SetRouteHeaders(w.Header(), info.Route)
	w.Header().Set("X-Served-By", strconv.FormatUint(uint64(info.ServedBy), 10))
	w.Header().Set("X-Applied-Index", strconv.FormatUint(info.AppliedIndex, 10))
	if err != nil {
		peer.WriteError(w, http.StatusServiceUnavailable, err)
		return
	}
	ans, err := meta.EncodeAnswer(v)
	if err != nil {
		peer.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(ans)
}
