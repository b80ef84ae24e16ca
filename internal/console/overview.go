package console

import (
	"context"
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// overviewPages serves the overview: the cluster summary and the nodes.
type overviewPages struct{ *console }

func (c overviewPages) overview(ctx context.Context) OverviewProps {
	p := OverviewProps{Summary: c.src.Summary(), Now: c.now()}
	groups, err := c.src.Groups(ctx)
	if err != nil {
		p.Err = errMessage(err)
	}
	p.Known = err == nil
	for _, g := range groups {
		if g.Leader != 0 {
			p.WithLeader++
		} else {
			p.WithoutLeader++
		}
		if c := g.LastCheck; c != nil && c.Verdict.Alarming() {
			p.Diverged = append(p.Diverged, *c)
		}
	}
	health := map[slotstore.NodeID]slotstore.NodeHealth{}
	if hs, err := c.src.NodeHealth(ctx); err == nil {
		for _, h := range hs {
			health[h.Node] = h
		}
	}
	for _, n := range c.src.Nodes() {
		row := NodeRow{NodeInfo: n, Health: slotstore.NodeHealth{Node: n.ID, Health: slotstore.NodeUnknown, ReportAgeMs: -1, HealthyForMs: -1}}
		if h, ok := health[n.ID]; ok {
			row.Health = h
		}
		for _, g := range groups {
			if g.Leader == n.ID {
				row.Leads++
			}
			for _, rv := range g.Replicas {
				if rv.Node == n.ID {
					row.Replicas++
				}
			}
		}
		p.Nodes = append(p.Nodes, row)
	}
	return p
}

func (c overviewPages) overviewPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Overview", "overview", OverviewBody(c.overview(r.Context())))
}

func (c overviewPages) overviewFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, OverviewFragment(c.overview(r.Context())))
}
