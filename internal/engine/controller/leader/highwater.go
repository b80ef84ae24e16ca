package leader

import (
	"context"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// DefaultHighWaterInterval is how often the controller leader records the
// groups' high-water marks (controller/highwater.go) when they rose.
const DefaultHighWaterInterval = 10 * time.Second

// RecordHighWater records, for every group whose replicas were seen past
// its mark, the highest applied index a current replica reported (a
// replica of the group's desired peers, so that a tombstoned one's old
// report does not raise the mark of the group recovered without it). It
// proposes nothing when no mark rose.
func (l *Leader) RecordHighWater(ctx context.Context, now time.Time) {
	st := l.cfg.Host.Controller()
	var marks []controller.HighWaterMark
	for _, v := range l.decisionViews(now) {
		current := map[slotstore.NodeID]uint64{}
		for _, p := range v.DesiredPeers {
			current[p.Node] = p.ReplicaID
		}
		best := controller.HighWaterMark{Group: v.ID, Index: st.HighWater[v.ID].Index}
		for _, rv := range v.Replicas {
			if rv.ReportAgeMs >= 0 && rv.ReplicaID == current[rv.Node] && rv.AppliedIndex > best.Index {
				best.Index, best.Node, best.AtMs = rv.AppliedIndex, rv.Node, now.UnixMilli()-rv.ReportAgeMs
			}
		}
		if best.Node != 0 {
			marks = append(marks, best)
		}
	}
	if len(marks) == 0 {
		return
	}
	if _, err := l.cfg.Host.Propose(ctx, controller.Command{HighWater: &controller.HighWater{Marks: marks}}); err != nil {
		l.cfg.Logger.Warn("could not record the groups' high-water marks", "groups", len(marks), "err", err)
	}
}
