package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// clusterRoutes serves /v1/cluster.
type clusterRoutes struct{ *api }

// slotRouteJSON is one hash slot's row of GET /v1/cluster/routes. The leader
// fields are left out while no live leader is known.
type slotRouteJSON struct {
	HashSlot    slotstore.HashSlot `json:"hash_slot"`
	Group       slotstore.GroupID  `json:"group"`
	LeaderNode  slotstore.NodeID   `json:"leader_node,omitempty"`
	LeaderTerm  uint64             `json:"leader_term,omitempty"`
	ConfigEpoch uint64             `json:"config_epoch"`
}

type routesJSON struct {
	Revision  uint64          `json:"revision"`
	HashSlots []slotRouteJSON `json:"hash_slots"`
}

// slotRoute is hash slot hs's row in snap.
func slotRoute(snap *routing.Snapshot, hs slotstore.HashSlot) slotRouteJSON {
	g := snap.Table().Group(hs)
	row := slotRouteJSON{HashSlot: hs, Group: g}
	if st, ok := snap.Group(g); ok {
		row.ConfigEpoch = st.ConfigEpoch
		if st.Leader != 0 {
			row.LeaderNode, row.LeaderTerm = st.Leader, st.Term
		}
	}
	return row
}

// getRoutes is GET /v1/cluster/routes: the HashToGroup table, all 256 hash
// slots, with its revision and each group's live leader.
func (a clusterRoutes) getRoutes(w http.ResponseWriter, r *http.Request) error {
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	if snap.Table() == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	a.writeJSON(w, r, http.StatusOK, routesOf(snap))
	return nil
}

// routesOf is the table of snap, all 256 hash slots with their groups'
// live leaders (snap has a table).
func routesOf(snap *routing.Snapshot) routesJSON {
	out := routesJSON{Revision: snap.Revision(), HashSlots: make([]slotRouteJSON, slotstore.HashSlotCount)}
	for hs := range out.HashSlots {
		out.HashSlots[hs] = slotRoute(snap, slotstore.HashSlot(hs))
	}
	return out
}

// resolveRequest is the body of POST /v1/cluster/routes/resolve.
type resolveRequest struct {
	Keys []string `json:"keys" validate:"required,min=1,max=1000,dive,routekey"`
}

// keyRouteJSON is one key's route. Ready is false, and Error says why, when
// the key cannot be routed right now.
type keyRouteJSON struct {
	Key string `json:"key"`
	slotRouteJSON
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
}

type resolvedJSON struct {
	Revision uint64         `json:"revision"`
	Routes   []keyRouteJSON `json:"routes"`
}

// resolveRoutes is POST /v1/cluster/routes/resolve: every key resolved
// against one snapshot, so all answers share one revision.
func (a clusterRoutes) resolveRoutes(w http.ResponseWriter, r *http.Request) error {
	var req resolveRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	snap, err := a.snapshot()
	if err != nil {
		return err
	}
	out := resolvedJSON{Revision: snap.Revision(), Routes: make([]keyRouteJSON, len(req.Keys))}
	for i, key := range req.Keys {
		hs := slotstore.HashSlotOfString(key)
		row := keyRouteJSON{Key: key, slotRouteJSON: slotRouteJSON{HashSlot: hs}}
		if _, err := snap.ResolveSlot(hs); err != nil {
			row.Error = err.Error()
		} else {
			row.Ready = true
		}
		if snap.Table() != nil {
			row.slotRouteJSON = slotRoute(snap, hs)
		}
		out.Routes[i] = row
	}
	a.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// getCluster is GET /v1/cluster: this node's summary of the cluster.
func (a clusterRoutes) getCluster(w http.ResponseWriter, r *http.Request) error {
	a.writeJSON(w, r, http.StatusOK, a.op.Summary())
	return nil
}

// nodeJSON is a registered node with its health as the controller leader
// observes it.
type nodeJSON struct {
	slotstore.NodeInfo
	Health       slotstore.Reachability `json:"health"`
	ReportAgeMs  int64                  `json:"report_age_ms"`
	HealthyForMs int64                  `json:"healthy_for_ms"`
	Version      slotstore.Version      `json:"version,omitzero"`
}

// listNodes is GET /v1/cluster/nodes. The node list is small and always
// returned whole; next_cursor is always empty. A node's health is unknown
// when the controller leader cannot be asked.
func (a clusterRoutes) listNodes(w http.ResponseWriter, r *http.Request) error {
	health := map[slotstore.NodeID]slotstore.NodeHealth{}
	if hs, err := a.op.NodeHealth(r.Context()); err == nil {
		for _, h := range hs {
			health[h.Node] = h
		}
	}
	var items []nodeJSON
	for _, n := range a.op.Nodes() {
		item := nodeJSON{NodeInfo: n, Health: slotstore.NodeUnknown, ReportAgeMs: -1, HealthyForMs: -1}
		if h, ok := health[n.ID]; ok {
			item.Health, item.ReportAgeMs, item.HealthyForMs, item.Version = h.Health, h.ReportAgeMs, h.HealthyForMs, h.Version
		}
		items = append(items, item)
	}
	a.writeJSON(w, r, http.StatusOK, whole(items))
	return nil
}

// registerNodeRequest is the body of POST /v1/cluster/nodes.
type registerNodeRequest struct {
	ID       uint64 `json:"id" validate:"required,min=1"`
	RaftAddr string `json:"raft_addr" validate:"required,hostname_port"`
	APIAddr  string `json:"api_addr" validate:"omitempty,hostname_port"`
	PeerAddr string `json:"peer_addr" validate:"omitempty,hostname_port"`
}

// registerNode is POST /v1/cluster/nodes: admit a joining node.
func (a clusterRoutes) registerNode(w http.ResponseWriter, r *http.Request) error {
	var req registerNodeRequest
	if err := a.decode(w, r, &req); err != nil {
		return err
	}
	var runs slotstore.Version
	if h := r.Header.Get(slotstore.VersionHeader); h != "" {
		v, err := slotstore.ParseVersion(h)
		if err != nil {
			return slotstore.Errorf(slotstore.CodeInvalidArgument, "header %s: %v", slotstore.VersionHeader, err)
		}
		runs = v
	}
	return a.reply(w, r, http.StatusOK)(a.be.RegisterNode(r.Context(), slotstore.NodeInfo{ID: slotstore.NodeID(req.ID),
		RaftAddr: req.RaftAddr, APIAddr: req.APIAddr, PeerAddr: req.PeerAddr}, runs))
}

// reply returns the end of a handler that shows what an operator call
// returned: status with it as JSON, or the call's error.
func (a *api) reply(w http.ResponseWriter, r *http.Request, status int) func(v any, err error) error {
	return func(v any, err error) error {
		if err != nil {
			return err
		}
		a.writeJSON(w, r, status, v)
		return nil
	}
}

// done ends a handler whose operator call answers nothing: 204, or the
// call's error.
func done(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
