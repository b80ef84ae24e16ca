package cluster

import (
	"context"
	"time"

	"slotmeta/internal/slotstore/meta"
)

// The projector drains the subscriber → membership outbox (see meta/outbox.go)
// of every group this node leads: each record is applied to every named
// user's membership (in the users' own groups, through the normal write
// path) and then acknowledged in the channel's group. Records are taken
// oldest first, at most projectBatch per group per round, and a record whose
// projection fails stays for the next round. Because projections are fenced
// by the subscriber version, repeating a record after a crash between the
// projection and the acknowledgement changes nothing.
const projectBatch = 64

func (n *Node) projectLoop() {
	defer n.bg.Done()
	if n.cfg.ProjectInterval < 0 {
		return
	}
	t := time.NewTicker(n.cfg.ProjectInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
		if _, err := n.ProjectOnce(ctx); err != nil {
			n.cfg.Logger.Debug("projection round incomplete", "err", err)
		}
		cancel()
	}
}

// ProjectOnce runs one projection round and returns how many records it
// acknowledged.
func (n *Node) ProjectOnce(ctx context.Context) (int, error) {
	snap := n.router.Load()
	table := snap.Table()
	if table == nil {
		return 0, nil
	}
	done := 0
	var firstErr error
	for g := range *n.groups.Load() {
		if st, ok := snap.Group(g); !ok || st.Leader != n.cfg.NodeID {
			continue
		}
		slots := table.SlotsOf(g)
		if len(slots) == 0 {
			continue
		}
		v, _, err := n.readLocal(ctx, &meta.ScanOutbox{FromSlot: slots[0], ToSlot: slots[len(slots)-1], Limit: projectBatch}, meta.Local)
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		page, _ := v.(*meta.OutboxPage)
		if page == nil {
			continue
		}
		for _, e := range page.Entries {
			if err := n.projectEntry(ctx, e); err != nil {
				firstErr = cmpErr(firstErr, err)
				break // keep the order within the group: retry next round
			}
			done++
		}
	}
	return done, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (n *Node) projectEntry(ctx context.Context, e meta.OutboxEntry) error {
	r := e.Record
	for _, uid := range r.UIDs {
		cmd := &meta.ProjectMembership{UserChannel: meta.UserChannel{UID: uid, ChannelType: r.ChannelType, ChannelID: r.ChannelID},
			Version: r.Version, Add: r.Add}
		res, _, err := n.Propose(ctx, cmd)
		if err == nil && !res.OK() {
			err = res.Err()
		}
		if err != nil {
			return err
		}
	}
	ack := &meta.AckOutbox{Header: meta.Header{HashSlot: e.HashSlot}, ChannelType: r.ChannelType, ChannelID: r.ChannelID, Seq: e.Seq}
	res, _, err := n.Propose(ctx, ack)
	if err == nil && !res.OK() {
		err = res.Err()
	}
	return err
}
