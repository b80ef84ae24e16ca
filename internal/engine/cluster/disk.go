package cluster

import (
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/diskguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// diskWatch runs the node's disk guard (package diskguard): it measures
// the data directory's filesystem every interval and says when the node
// becomes low on disk, and when it is no longer. While it is low the
// dispatcher refuses the writes this node would lead (Refuse), /readyz
// names the disk, the metrics and the node's status say so. While it is
// full the Raft transport drops the appends and snapshot chunks other
// nodes send (raftnet.Transport.Hold).
type diskWatch struct {
	n *Node
	g *diskguard.Guard
}

func newDiskWatch(n *Node) diskWatch {
	return diskWatch{n: n, g: diskguard.New(diskguard.Config{Dir: n.cfg.DataDir, Reserve: n.cfg.DiskReserve,
		Interval: n.cfg.DiskCheckInterval, Now: n.cfg.Now})}
}

// run checks until stop closes; its first check is at once.
func (w diskWatch) run(stop <-chan struct{}) {
	t := time.NewTicker(w.g.Interval())
	defer t.Stop()
	for {
		w.check()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (w diskWatch) check() {
	s, changed := w.g.Check()
	switch {
	case !changed:
	case s.Full:
		w.n.cfg.Logger.Error("disk full: this node's replicas store nothing other nodes send them (they fall behind) until space is freed",
			"free_bytes", s.Free, "total_bytes", s.Total, "reserve_bytes", s.Reserve, "dir", w.n.cfg.DataDir)
	case s.Low:
		w.n.cfg.Logger.Error("disk low: writes to the groups this node leads are refused until space is freed",
			"free_bytes", s.Free, "total_bytes", s.Total, "reserve_bytes", s.Reserve, "dir", w.n.cfg.DataDir)
	default:
		w.n.cfg.Logger.Warn("disk no longer low: writes taken again", "free_bytes", s.Free, "total_bytes", s.Total)
	}
}

// usage is the last measure, as the node's summary shows it.
func (w diskWatch) usage() slotstore.DiskUsage {
	s := w.g.State()
	return slotstore.DiskUsage{Low: s.Low, Full: s.Full, FreeBytes: s.Free, TotalBytes: s.Total, ReserveBytes: s.Reserve}
}

// refuse is the dispatcher's Refuse: nil unless the disk is low.
func (w diskWatch) refuse() error { return w.g.Refusal(w.n.cfg.NodeID) }
