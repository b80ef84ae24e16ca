package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// routesStream is GET /v1/watch?resource=routes: the route table with each
// group's live leader (GET /v1/cluster/routes' answer) as a `routes` event
// at the start and again at every change of the node's routing snapshot
// (a table revision, a leader or term), coalesced: a watcher always gets
// the latest. Progress events keep an idle stream open. Nothing to resume
// from: a reconnect starts with the whole table again.
func (a *api) routesStream(w http.ResponseWriter, r *http.Request, sp *watchSpec) error {
	changed := a.be.Watches().RoutesChanged
	if changed == nil {
		return slotstore.Errorf(slotstore.CodeFailedPrecondition, "this node does not stream its routes")
	}
	ctx := r.Context()
	next := changed()
	first, err := a.snapshot()
	if err != nil {
		return err
	}
	if first.Table() == nil {
		return slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	s := startSSE(w, a.metrics)
	tick := time.NewTicker(sp.progress)
	defer tick.Stop()
	var last []byte
	for snap := first; ; {
		if snap.Table() != nil {
			b, err := json.Marshal(routesOf(snap))
			if err != nil {
				return nil
			}
			if !bytes.Equal(b, last) {
				if s.sendRaw("routes", b) != nil {
					return nil
				}
				last = b
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.stopping:
			return nil // the client opens the stream on another node
		case <-next:
		case <-tick.C:
			if s.sendRaw("progress", mustJSON(progressJSON{TimeMs: time.Now().UnixMilli()})) != nil {
				return nil
			}
		}
		next = changed()
		snap = a.be.Routes()
	}
}
