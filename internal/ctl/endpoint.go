package ctl

import (
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/client"
)

// endpoint status|health [--cluster]: each endpoint asked about itself,
// with no failover to another — GET /v1/cluster there (status: its own
// view, its own replicas, which it knows without the controller) or GET
// /readyz (health) — in the manner of etcdctl's endpoint status and
// health. --cluster asks every registered node at its API address
// instead of the --endpoints. The exit code is 5 when any endpoint does
// not answer or is not ready, 0 when all are.

// endpointAnswer is one endpoint's answer.
type endpointAnswer struct {
	Endpoint string                 `json:"endpoint"`
	Status   *client.ClusterSummary `json:"status,omitempty"`
	Healthy  bool                   `json:"healthy"`
	TookMs   int64                  `json:"took_ms"`
	Error    string                 `json:"error,omitempty"`
}

func endpointStatus(c *cmd) int { return askEndpoints(c, false) }
func endpointHealth(c *cmd) int { return askEndpoints(c, true) }

func askEndpoints(c *cmd, health bool) int {
	all := c.fs.Bool("cluster", false, "ask every registered node at its API address, not only the --endpoints")
	if _, code, ok := c.parse(); !ok {
		return code
	}
	targets := c.s.cfg.Endpoints
	if *all {
		r, err := c.api.ListNodesWithResponse(c.ctx)
		if _, code, ok := answered(c, r, err); !ok {
			return code
		}
		scheme := "http"
		if u, err := url.Parse(targets[0]); err == nil && u.Scheme != "" {
			scheme = u.Scheme
		}
		targets = nil
		for _, n := range r.JSON200.Items {
			if n.ApiAddr != nil && *n.ApiAddr != "" {
				targets = append(targets, scheme+"://"+*n.ApiAddr)
			}
		}
		if len(targets) == 0 {
			return c.fail(errorf(client.ErrorCodeNotFound, "no node has an API address"))
		}
	}
	answers := make([]endpointAnswer, len(targets))
	var wg sync.WaitGroup
	for i, e := range targets {
		wg.Go(func() { answers[i] = c.askEndpoint(e, health) })
	}
	wg.Wait()
	code := c.showValue(map[string]any{"endpoints": answers}, func(t *table) {
		if health {
			t.header("ENDPOINT", "HEALTHY", "TOOK_MS", "ERROR")
			for _, a := range answers {
				t.row(a.Endpoint, a.Healthy, a.TookMs, a.Error)
			}
			return
		}
		// VERSION and CLUSTER_VERSION during a rolling upgrade; the
		// controller's copies agree when CONTROLLER_DIGEST is alike at
		// one CONTROLLER_APPLIED (docs/runbook.md).
		// HEARS: the other nodes a Raft message came from within 5 s, of
		// those registered (its own transport's view).
		t.header("ENDPOINT", "NODE", "READY", "CONTROLLER", "ROUTE_REVISION", "REPLICAS", "LEADS", "HEARS", "VERSION", "CLUSTER_VERSION",
			"CONTROLLER_APPLIED", "CONTROLLER_DIGEST", "TOOK_MS", "ERROR")
		for _, a := range answers {
			if s := a.Status; s != nil {
				leads := 0
				for _, l := range s.Local {
					if l.Leader == s.NodeId {
						leads++
					}
				}
				t.row(a.Endpoint, s.NodeId, s.Ready, s.ControllerLeader, s.RouteRevision, len(s.Local), leads, hears(s.Peers), s.Version, s.ClusterVersion,
					s.ControllerApplied, s.ControllerDigest, a.TookMs, a.Error)
			} else {
				t.row(a.Endpoint, "", false, "", "", "", "", "", "", "", "", "", a.TookMs, a.Error)
			}
		}
	})
	for _, a := range answers {
		if !a.Healthy && code == exitOK {
			code = exitUnavailable
		}
	}
	return code
}

// hears renders a node's peer view as "heard/registered others" (a
// message within 5 s counts), "-" from a node that reports none.
func hears(peers *[]client.PeerView) string {
	if peers == nil {
		return "-"
	}
	n := 0
	for _, p := range *peers {
		if p.HeardAgoMs >= 0 && p.HeardAgoMs < 5000 {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(*peers))
}

// askEndpoint asks endpoint e alone, within the command's deadline.
func (c *cmd) askEndpoint(e string, health bool) endpointAnswer {
	out := endpointAnswer{Endpoint: e}
	cfg := c.s.cfg
	cfg.Endpoints = []string{e}
	rc, err := dial(cfg)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer rc.Close()
	ctx := c.ctx // --timeout bounds the whole command
	start := time.Now()
	if health {
		r, err := rc.API().ReadyzWithResponse(ctx)
		out.TookMs = time.Since(start).Milliseconds()
		switch {
		case err != nil:
			out.Error = err.Error()
		case r.JSON200 != nil:
			out.Healthy = true
		case r.JSON503 != nil:
			out.Error = string(r.JSON503.Error.Code) + ": " + r.JSON503.Error.Message
		default:
			out.Error = r.Status()
		}
		return out
	}
	r, err := rc.API().GetClusterWithResponse(ctx)
	out.TookMs = time.Since(start).Milliseconds()
	switch {
	case err != nil:
		out.Error = err.Error()
	case r.JSON200 != nil:
		out.Status = r.JSON200
		out.Healthy = r.JSON200.Ready
		if r.JSON200.NotReadyReason != nil {
			out.Error = *r.JSON200.NotReadyReason
		}
	default:
		out.Error = r.Status()
	}
	return out
}
