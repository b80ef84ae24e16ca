package cluster

import (
	"context"
	"sync"
	"time"

	"slotmeta/internal/slotstore/meta"
)

// The projector drains the subscriber → membership outbox (see meta/outbox.go)
// of every group this node leads: each record is applied to every named
// user's membership (in the users' own groups, through the normal write
// path) and then acknowledged in the channel's group.
//
// Order does not matter: every projection is fenced by the record's version
// (the channel group's revision of the change), and a membership keeps the
// newest version it has seen (a leave keeps a tombstone), so an older record
// projected after a newer one changes nothing. The projector therefore
// projects a page of records at once: the memberships of all its records
// concurrently (at most projectParallel proposals in flight per node, which
// the proposers coalesce into few Raft entries), each record acknowledged as
// soon as all of its users are done. A record whose projection fails stays
// for the next round; repeating one after a crash between the projection and
// the acknowledgement changes nothing.
//
// A round that finds a full page starts the next one at once; otherwise the
// projector waits for ProjectInterval. The backlog seen by the last scan of
// each led group is exported (slotmeta_projection_backlog; a full page means
// "at least").
const (
	projectBatch    = 256 // records scanned per group per round
	projectParallel = 64  // projections and acknowledgements in flight per node
)

func (n *Node) projectLoop() {
	defer n.bg.Done()
	if n.cfg.ProjectInterval < 0 {
		return
	}
	t := time.NewTicker(n.cfg.ProjectInterval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RequestTimeout)
		_, more, err := n.projectRound(ctx)
		cancel()
		if err != nil {
			n.cfg.Logger.Debug("projection round incomplete", "err", err)
		}
		if more && err == nil {
			select {
			case <-n.stop:
				return
			default:
				continue
			}
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// ProjectOnce runs one projection round and returns how many records it
// acknowledged.
func (n *Node) ProjectOnce(ctx context.Context) (int, error) {
	done, _, err := n.projectRound(ctx)
	return done, err
}

// projectRound projects one page of every led group's outbox; more reports
// that a page was full (there may be more records waiting).
func (n *Node) projectRound(ctx context.Context) (done int, more bool, err error) {
	snap := n.router.Load()
	table := snap.Table()
	if table == nil {
		return 0, false, nil
	}
	var entries []meta.OutboxEntry
	var firstErr error
	for g := range *n.groups.Load() {
		if st, ok := snap.Group(g); !ok || st.Leader != n.cfg.NodeID {
			n.metrics.backlog(g, -1)
			continue
		}
		slots := table.SlotsOf(g)
		if len(slots) == 0 {
			n.metrics.backlog(g, -1)
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
		n.metrics.backlog(g, len(page.Entries))
		more = more || len(page.Entries) >= projectBatch
		entries = append(entries, page.Entries...)
	}
	if len(entries) == 0 {
		return 0, false, firstErr
	}
	acked, err := n.projectEntries(ctx, entries)
	return acked, more, cmpErr(firstErr, err)
}

// projectEntries projects and acknowledges entries with at most
// projectParallel proposals in flight, and returns how many were
// acknowledged and the first error.
func (n *Node) projectEntries(ctx context.Context, entries []meta.OutboxEntry) (int, error) {
	sem := make(chan struct{}, projectParallel)
	var mu sync.Mutex
	var firstErr error
	acked := 0
	note := func(err error) {
		mu.Lock()
		firstErr = cmpErr(firstErr, err)
		mu.Unlock()
	}
	propose := func(cmd meta.Command) error {
		res, _, err := n.Propose(ctx, cmd)
		if err == nil && !res.OK() {
			err = res.Err()
		}
		return err
	}
	var wg sync.WaitGroup
	for _, e := range entries {
		r := e.Record
		var recWG sync.WaitGroup
		ok := true // guarded by mu
		for _, uid := range r.UIDs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				wg.Wait()
				return acked, cmpErr(firstErr, ctx.Err())
			}
			recWG.Add(1)
			go func() {
				defer func() { <-sem; recWG.Done() }()
				cmd := &meta.ProjectMembership{UserChannel: meta.UserChannel{UID: uid, ChannelType: r.ChannelType, ChannelID: r.ChannelID},
					Version: r.Version, Add: r.Add}
				if err := propose(cmd); err != nil {
					mu.Lock()
					firstErr, ok = cmpErr(firstErr, err), false
					mu.Unlock()
				}
			}()
		}
		// The acknowledgement waits for the record's own projections only.
		wg.Add(1)
		go func() {
			defer wg.Done()
			recWG.Wait()
			mu.Lock()
			projected := ok
			mu.Unlock()
			if !projected {
				return
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				note(ctx.Err())
				return
			}
			defer func() { <-sem }()
			ack := &meta.AckOutbox{Header: meta.Header{HashSlot: e.HashSlot}, ChannelType: r.ChannelType, ChannelID: r.ChannelID, Seq: e.Seq}
			if err := propose(ack); err != nil {
				note(err)
				return
			}
			mu.Lock()
			acked++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return acked, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
