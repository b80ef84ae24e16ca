package routed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// refreshTimeout bounds one refresh call.
const refreshTimeout = 3 * time.Second

// want records what the next refresh must do and wakes the refresher.
func (c *Client) want(f func(*pendingRefresh)) {
	c.pmu.Lock()
	f(&c.pending)
	c.pmu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // one is pending already: it will see this too
	}
}

// staleSlot asks for slot's route again, by one of its keys.
func (c *Client) staleSlot(slot int, key string) {
	c.want(func(p *pendingRefresh) {
		if p.slots == nil {
			p.slots = map[int]string{}
		}
		p.slots[slot] = key
	})
}

// refreshLoop is the one refresher: it runs what is pending, at most once
// per Config.RefreshEvery, until ctx ends. A failed refresh is asked for
// again after the interval.
func (c *Client) refreshLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		if c.limiter.Wait(ctx) != nil {
			return
		}
		c.pmu.Lock()
		p := c.pending
		c.pending = pendingRefresh{}
		c.pmu.Unlock()
		if err := c.refresh(ctx, p); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("routed: refresh failed; asking again", "err", err)
			c.want(func(q *pendingRefresh) {
				q.routes, q.nodes = q.routes || p.routes, q.nodes || p.nodes
				for s, k := range p.slots {
					if q.slots == nil {
						q.slots = map[int]string{}
					}
					q.slots[s] = k
				}
			})
		}
	}
}

// Refresh reads the nodes and the whole route table now (bounded by ctx),
// waiting for the answer: a caller that wants a complete view before its
// first request calls it once.
func (c *Client) Refresh(ctx context.Context) error {
	c.first.Do(func() {}) // this is the first view: the first request need not ask again
	return c.refresh(ctx, pendingRefresh{routes: true, nodes: true})
}

func (c *Client) refresh(ctx context.Context, p pendingRefresh) error {
	c.stats.refreshes.Add(1)
	var errs []error
	if p.nodes {
		errs = append(errs, c.refreshNodes(ctx))
	}
	if p.routes {
		errs = append(errs, c.refreshRoutes(ctx))
	} else if len(p.slots) > 0 {
		errs = append(errs, c.resolveSlots(ctx, p.slots))
	}
	return errors.Join(errs...)
}

// onAnyNode runs call against the nodes in turn until one answers.
func (c *Client) onAnyNode(ctx context.Context, call func(ctx context.Context, api *client.ClientWithResponses) error) error {
	var errs []error
	avoid := ""
	for range min(3, len(c.seeds)+len(c.view.load().nodes)) {
		u := c.anyNode(avoid)
		api, err := c.direct(u)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, refreshTimeout)
		err = call(cctx, api)
		cancel()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", u.Host, err))
		avoid = u.Host
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// direct is the typed API of one node, without routing or retries.
func (c *Client) direct(u *url.URL) (*client.ClientWithResponses, error) {
	opts := []client.ClientOption{client.WithHTTPClient(c.hc)}
	for _, e := range c.editors {
		opts = append(opts, client.WithRequestEditorFn(e))
	}
	return client.NewClientWithResponses(u.String(), opts...)
}

func statusErr(status int, body []byte) error {
	return fmt.Errorf("%d %s", status, bytesHead(body))
}

func bytesHead(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

func (c *Client) refreshRoutes(ctx context.Context) error {
	return c.onAnyNode(ctx, func(ctx context.Context, api *client.ClientWithResponses) error {
		r, err := api.GetRoutesWithResponse(ctx)
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return statusErr(r.StatusCode(), r.Body)
		}
		c.view.learnRoutes(r.JSON200)
		c.checkNodes()
		return nil
	})
}

func (c *Client) refreshNodes(ctx context.Context) error {
	return c.onAnyNode(ctx, func(ctx context.Context, api *client.ClientWithResponses) error {
		r, err := api.ListNodesWithResponse(ctx)
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return statusErr(r.StatusCode(), r.Body)
		}
		scheme := c.seeds[0].Scheme
		nodes := map[uint64]*url.URL{}
		for _, n := range r.JSON200.Items {
			if n.ApiAddr != nil && *n.ApiAddr != "" && n.Id > 0 {
				nodes[uint64(n.Id)] = &url.URL{Scheme: scheme, Host: *n.ApiAddr}
			}
		}
		c.view.learnNodes(nodes)
		return nil
	})
}

// resolveSlots asks for the routes of the stale slots only, one key each,
// under one revision.
func (c *Client) resolveSlots(ctx context.Context, slots map[int]string) error {
	keys := slices.Collect(maps.Values(slots))
	sort.Strings(keys)
	return c.onAnyNode(ctx, func(ctx context.Context, api *client.ClientWithResponses) error {
		r, err := api.ResolveRoutesWithResponse(ctx, client.ResolveRequest{Keys: keys})
		if err != nil {
			return err
		}
		if r.JSON200 == nil {
			return statusErr(r.StatusCode(), r.Body)
		}
		for _, kr := range r.JSON200.Routes {
			l := leader{}
			if kr.LeaderNode != nil {
				l.node = uint64(*kr.LeaderNode)
			}
			if kr.LeaderTerm != nil {
				l.term = uint64(*kr.LeaderTerm)
			}
			if kr.HashSlot >= 0 && kr.HashSlot < slotCount && kr.Group > 0 {
				c.view.learnSlot(uint64(r.JSON200.Revision), kr.HashSlot, uint32(kr.Group), l)
			}
		}
		if uint64(r.JSON200.Revision) > c.view.load().revision {
			c.want(func(p *pendingRefresh) { p.routes = true }) // more than these slots moved
		}
		c.checkNodes()
		return nil
	})
}

// checkNodes asks for the nodes again when a leader's address is unknown.
func (c *Client) checkNodes() {
	t := c.view.load()
	for _, l := range t.leaders {
		if _, ok := t.nodes[l.node]; !ok {
			c.want(func(p *pendingRefresh) { p.nodes = true })
			return
		}
	}
}
