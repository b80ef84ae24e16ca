package dispatch

import (
	"context"
	"sync"

	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Reads of many groups at once (a batch split by group under one routing
// snapshot, issue 28). Read answers one query; a batch of 100 keys over 64
// groups would cost some 50 of them, each with a goroutine, a dispatch, a
// store snapshot and a lookup through the engine of its own. ReadRows
// instead takes the parts whose group has a replica on this node together:
// their read rounds run side by side (a leader under its lease needs none;
// a follower asks its leader's node, and those questions travel in one
// peer request per node: package peer's read-index batcher), then one view
// of the node's store answers all of them (Local.GetRows). The rest — no
// replica here, a round refused, a replica stopped meanwhile — are read as
// Read reads one query, all at once.

// ReadRows answers qs[i] in out[i] (meta.RowsReader).
func (d *Dispatcher) ReadRows(ctx context.Context, qs []*meta.GetRows, c meta.Consistency) []meta.RowsAnswer {
	out := make([]meta.RowsAnswer, len(qs))
	localErr := make([]error, len(qs)) // a part's local round, when it failed
	counted := heat.Counted(ctx)
	var (
		here    []int // the parts a replica here may answer
		groups  []slotstore.GroupID
		replica []Replica
		rest    []int // the parts Read answers
	)
	router := d.cfg.Router.Load()
	for i, q := range qs {
		if counted {
			d.cfg.Heat.Read(q.RouteSlot())
		}
		route, err := router.ResolveSlot(q.RouteSlot())
		if ferr := d.readsFenced(route.GroupID); err == nil && ferr != nil {
			out[i].Err = ferr
			continue
		}
		var r Replica
		if err == nil && route.GroupID != 0 {
			r = d.cfg.Local.Replica(route.GroupID)
		}
		// A replica that knows no leader cannot complete a round: the
		// group's other nodes are asked at once, as Read does.
		if r == nil || (c != meta.Local && !r.LeaderKnown()) {
			rest = append(rest, i)
			continue
		}
		here, groups, replica = append(here, i), append(groups, route.GroupID), append(replica, r)
	}
	if c != meta.Local && len(here) > 0 {
		// Each round normally takes one round trip at most; one that has not
		// completed in half the budget is left for the other nodes.
		lctx, cancel := context.WithTimeout(ctx, localReadBudget(ctx))
		var wg sync.WaitGroup
		for j, r := range replica {
			wg.Go(func() { localErr[here[j]] = r.AwaitRead(lctx) })
		}
		wg.Wait()
		cancel()
		ready, rgroups := here[:0:0], groups[:0:0]
		for j, i := range here {
			switch err := localErr[i]; {
			case err == nil:
				ready, rgroups = append(ready, i), append(rgroups, groups[j])
			case !slotstore.ErrorCode(err).Retryable() || ctx.Err() != nil:
				out[i].Err = err
			default:
				rest = append(rest, i)
			}
		}
		here, groups = ready, rgroups
	}
	if len(here) > 0 {
		part := make([]*meta.GetRows, len(here))
		for j, i := range here {
			part[j] = qs[i]
		}
		batches, err := d.cfg.Local.GetRows(groups, part)
		for j, i := range here {
			switch {
			case err != nil:
				out[i].Err = err
			case batches[j] == nil: // its replica stopped: read it where the group is
				localErr[i] = slotstore.Errorf(slotstore.CodeRouteNotReady, "the replica of group %d here stopped", groups[j])
				rest = append(rest, i)
			default:
				out[i].Batch = batches[j]
			}
		}
	}
	var wg sync.WaitGroup
	for _, i := range rest {
		wg.Go(func() {
			v, _, err := d.read(ctx, qs[i], c, localErr[i])
			if err != nil {
				out[i].Err = err
				return
			}
			if b, ok := v.(*meta.RowBatch); ok && b != nil && len(b.Items) == len(qs[i].Keys) {
				out[i].Batch = b
				return
			}
			out[i].Err = slotstore.Errorf(slotstore.CodeInternal, "a read of %d rows answered %T", len(qs[i].Keys), v)
		})
	}
	wg.Wait()
	return out
}
