package routed

import "sync/atomic"

// Stats counts what the client did since it started.
type Stats struct {
	Requests     uint64 // calls of Do (an API call, or a part of a batch)
	Direct       uint64 // attempts sent straight to the node believed to lead (or pinned)
	Retries      uint64 // attempts after the first
	Refreshes    uint64 // refreshes of routes, nodes or stale slots
	StreamEvents uint64 // route tables taken from the route stream
}

type stats struct {
	requests, direct, retries, refreshes, streamEvents atomic.Uint64
}

// Stats is a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Requests:     c.stats.requests.Load(),
		Direct:       c.stats.direct.Load(),
		Retries:      c.stats.retries.Load(),
		Refreshes:    c.stats.refreshes.Load(),
		StreamEvents: c.stats.streamEvents.Load(),
	}
}
