// Package projector drains the subscriber → membership outbox of the slot
// groups a node leads: each record (a channel's subscriber change) is
// applied to every named user's membership, in the users' own groups,
// through the normal write path, and then acknowledged in the channel's
// group.
//
// Model. Order does not matter: every projection is fenced by the record's
// version (the channel group's revision of the change), and a membership
// keeps the newest version it has seen (a leave keeps a tombstone), so an
// older record projected after a newer one changes nothing. A page of
// records is projected at once: the memberships of all its records
// concurrently (at most projectParallel proposals in flight per node, which
// the proposers coalesce into few Raft entries), each record acknowledged as
// soon as all of its users are done. A record whose projection fails stays
// for the next round; repeating one after a crash between the projection and
// the acknowledgement changes nothing.
//
// Concurrency contract. Run is the projector's one loop, owned by the node
// (it returns when its context ends); Once may be called from any goroutine while
// Run does not run (tests drive it with Interval < 0).
package projector

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// A round that finds a full page starts the next one at once; otherwise the
// projector waits for ProjectInterval. The backlog seen by the last scan of
// each led group is exported (slotmeta_projection_backlog; a full page means
// "at least").
const (
	projectBatch    = 256 // records scanned per group per round
	projectParallel = 64  // projections and acknowledgements in flight per node
)

// Group is one slot group replica of the node, as the projector sees it.
type Group struct {
	ID    slotstore.GroupID
	Led   bool                 // the node leads it
	Slots []slotstore.HashSlot // the hash slots it owns, in order
	// Applied is the local replica's applied index when the list was made,
	// meaningful when Open (its state machine exists). The outbox changes
	// only with applied commands, so a group whose last scan found it empty
	// at this index is not scanned again until the index moves. A group
	// that never applied a command is at 0 — a fresh cluster at rest: 0 is
	// an index like another, not "unknown" (it was, and such a cluster
	// scanned every led group every round).
	Applied uint64
	Open    bool
}

// Node is what the projector needs of its node.
type Node interface {
	// Groups lists the node's replicas.
	Groups() []Group
	// ScanOutbox reads a page of g's outbox from the local replica.
	ScanOutbox(ctx context.Context, g slotstore.GroupID, q *meta.ScanOutbox) (*meta.OutboxPage, error)
	// Propose replicates a command (projection or acknowledgement).
	Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error)
}

// Config tunes a projector.
type Config struct {
	Node         Node
	Interval     time.Duration // between rounds that find no full page (negative: Run returns at once)
	RoundTimeout time.Duration // of one round
	// Backlog records the backlog one scan of a led group saw (n < 0: the
	// node does not lead it).
	Backlog func(g slotstore.GroupID, n int)
	Logger  *slog.Logger
}

// Projector drains the outboxes of the groups its node leads.
type Projector struct {
	cfg Config
	// emptyAt is, per group, what its last scan that found the outbox
	// empty read (rounds are sequential: Run's, or a test's Once).
	emptyAt map[slotstore.GroupID]scanned
}

// scanned is what a scan read: the group's state at an applied index, over
// a range of hash slots. The same index over other slots is another scan —
// a slot migrated in changes the routing table, not the group's index, and
// its copied outbox records would stay unseen until the next write.
type scanned struct {
	applied     uint64
	first, last slotstore.HashSlot
	slots       int
}

func scanOf(g Group) scanned {
	return scanned{applied: g.Applied, first: g.Slots[0], last: g.Slots[len(g.Slots)-1], slots: len(g.Slots)}
}

// New returns a projector.
func New(cfg Config) *Projector {
	return &Projector{cfg: cfg, emptyAt: map[slotstore.GroupID]scanned{}}
}

// Run projects round after round until life ends (each round's context
// derives from it, so a round ends with it too).
func (p *Projector) Run(life context.Context) {
	if p.cfg.Interval < 0 {
		return
	}
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(life, p.cfg.RoundTimeout)
		_, more, err := p.round(ctx)
		cancel()
		if err != nil {
			p.cfg.Logger.Debug("projection round incomplete", "err", err)
		}
		if more && err == nil {
			if life.Err() != nil {
				return
			}
			continue
		}
		select {
		case <-life.Done():
			return
		case <-t.C:
		}
	}
}

// Once runs one projection round and returns how many records it
// acknowledged.
func (p *Projector) Once(ctx context.Context) (int, error) {
	done, _, err := p.round(ctx)
	return done, err
}

// round projects one page of every led group's outbox; more reports that a
// page was full (there may be more records waiting).
func (p *Projector) round(ctx context.Context) (done int, more bool, err error) {
	var entries []meta.OutboxEntry
	var firstErr error
	groups := p.cfg.Node.Groups()
	listed := make(map[slotstore.GroupID]bool, len(groups))
	for _, g := range groups {
		listed[g.ID] = true
		if !g.Led || len(g.Slots) == 0 {
			p.cfg.Backlog(g.ID, -1)
			continue
		}
		if at, ok := p.emptyAt[g.ID]; ok && g.Open && at == scanOf(g) {
			// Empty when scanned at this applied index, and nothing applied
			// since: a local scan of every led group every interval was a
			// twentieth of an idle node's CPU (bench/README.md, issue 31).
			continue
		}
		delete(p.emptyAt, g.ID)
		page, err := p.cfg.Node.ScanOutbox(ctx, g.ID, &meta.ScanOutbox{FromSlot: g.Slots[0], ToSlot: g.Slots[len(g.Slots)-1], Limit: projectBatch})
		if err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		if page == nil {
			continue
		}
		if len(page.Entries) == 0 && g.Open {
			// The scan read a state at or past g.Applied: if the index is
			// still g.Applied next round, that state is this one.
			p.emptyAt[g.ID] = scanOf(g)
		}
		p.cfg.Backlog(g.ID, len(page.Entries))
		more = more || len(page.Entries) >= projectBatch
		entries = append(entries, page.Entries...)
	}
	for id := range p.emptyAt {
		if !listed[id] {
			delete(p.emptyAt, id) // the replica left the node
		}
	}
	if len(entries) == 0 {
		return 0, false, firstErr
	}
	acked, err := p.project(ctx, entries)
	return acked, more, cmpErr(firstErr, err)
}

// project projects and acknowledges entries with at most projectParallel
// proposals in flight, and returns how many were acknowledged and the first
// error.
func (p *Projector) project(ctx context.Context, entries []meta.OutboxEntry) (int, error) {
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
		res, _, err := p.cfg.Node.Propose(ctx, cmd)
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
				// This record's projections already started are not under
				// wg yet: wait for them too before reading what they set.
				recWG.Wait()
				wg.Wait()
				mu.Lock()
				defer mu.Unlock()
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
