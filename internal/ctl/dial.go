package ctl

import (
	"log/slog"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/client/routed"
)

// dial builds the one API client every command calls through: the
// route-aware client (client/routed) of the endpoints — each keyed request
// to the leader of its key's group, an endpoint that cannot be reached left
// for the next, retries by the error contract — with HTTPS when a CA is
// given and the bearer token. A command is short-lived: no route stream,
// and the first view of the cluster is asked for only when the first
// request goes out (a usage error sends nothing). The command's context
// (--timeout) bounds every call; close stops the client.
func dial(cfg config) (*routed.Client, error) {
	rc := routed.Config{
		Endpoints:     cfg.Endpoints,
		Token:         cfg.Token,
		NoRouteStream: true,
		MaxAttempts:   3,
		Logger:        slog.New(slog.DiscardHandler),
	}
	if cfg.CACert != "" {
		rc.TLS = &client.TLSFiles{CA: cfg.CACert, CertFile: cfg.Cert, KeyFile: cfg.Key}
	}
	return routed.New(rc)
}
