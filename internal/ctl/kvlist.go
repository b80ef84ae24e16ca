package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slotmeta/slotmeta/client"
)

// kvListing is what kv get lists instead of reading one key: the keys with
// a prefix and/or in [from, to).
type kvListing struct {
	prefix, from, to *string
	keysOnly         *bool
	pageSize, limit  *int
}

func (c *cmd) kvListFlags() *kvListing {
	l := &kvListing{}
	l.prefix = c.fs.String("prefix", "", "list the keys that begin with `P` (\"\" with --prefix: every key)")
	l.from = c.fs.String("from", "", "list the keys at or after `KEY` (byte order)")
	l.to = c.fs.String("to", "", "list the keys before `KEY` (byte order)")
	l.keysOnly = c.fs.Bool("keys-only", false, "a listing shows keys and revisions, not values")
	l.pageSize = c.fs.Int("page-size", 1000, "keys asked per request of a listing (1–1000)")
	l.limit = c.fs.Int("limit", 0, "a listing stops after `N` keys (0: every key)")
	return l
}

// listing reports whether c was given a listing flag (after parse).
func listing(c *cmd) bool { return c.set["prefix"] || c.set["from"] || c.set["to"] }

// kvList lists the keys page after page (GET /v1/kv) until the listing is
// done, --limit keys were shown, or --timeout. Keys come in hash-slot
// order, as the API lists them: a key's place is its hash slot, then the
// key. With -o json the pages are one KVPage holding every key.
func kvList(c *cmd, l *kvListing, cons *string) int {
	if *l.pageSize < 1 || *l.pageSize > 1000 || *l.limit < 0 {
		return c.usageError("--page-size takes 1 to 1000, --limit 0 or more")
	}
	if c.set["to"] && *l.to <= *l.from {
		return c.usageError("--to must sort after --from")
	}
	params := client.ListKVParams{Limit: l.pageSize, Consistency: (*client.ListKVParamsConsistency)(cons)}
	if c.set["prefix"] {
		params.Prefix = l.prefix
	}
	if c.set["from"] {
		params.Start = l.from
	}
	if c.set["to"] {
		params.End = l.to
	}
	if *l.keysOnly {
		params.KeysOnly = l.keysOnly
	}
	all := client.KVPage{Items: []client.KVItem{}}
	for {
		if *l.limit > 0 {
			params.Limit = new(min(*l.pageSize, *l.limit-len(all.Items)))
		}
		r, err := c.api.ListKVWithResponse(c.ctx, &params)
		if _, code, ok := answered(c, r, err); !ok {
			return code
		}
		all.Items = append(all.Items, r.JSON200.Items...)
		next := r.JSON200.NextCursor
		if full := *l.limit > 0 && len(all.Items) >= *l.limit; full || next == nil || *next == "" {
			if full {
				all.NextCursor = next // where the listing would go on
			}
			break
		}
		params.Cursor = next
	}
	return c.showValue(all, func(t *table) {
		if *l.keysOnly {
			t.header("KEY", "REVISION")
		} else {
			t.header("KEY", "VALUE", "REVISION")
		}
		for _, kv := range all.Items {
			if *l.keysOnly {
				t.row(kv.Key, kv.Revision)
			} else {
				t.row(kv.Key, deref(kv.Value), kv.Revision)
			}
		}
	})
}

// kv watch [KEY | --prefix P]: GET /v1/watch?resource=kv, followed
// (client.Follow: resumed after a disconnect, on another endpoint too)
// until interrupted or --timeout. Each change is one line — put KEY VALUE
// REVISION, or delete KEY — or, with -o json, one event per line as the
// API sends it. --cursor continues after a listing's X-Watch-Cursor or an
// event's cursor.
func kvWatch(c *cmd) int {
	prefix := c.fs.String("prefix", "", "follow the keys that begin with `P`")
	from := c.fs.String("cursor", "", "start after `CURSOR` (an event's, or a listing's X-Watch-Cursor); default: now")
	c.untimed = true
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	params := client.WatchParams{Resource: "kv"}
	prefixSet := c.set["prefix"]
	switch {
	case len(pos) == 1 && prefixSet:
		return c.usageError("KEY and --prefix exclude each other")
	case len(pos) == 1:
		params.Key = &pos[0]
	case prefixSet:
		params.Prefix = prefix
	}
	api, err := c.streamClient()
	if err != nil {
		return c.usageError(err.Error())
	}
	err = api.Follow(c.ctx, &params, client.FollowOptions{From: *from, Servers: c.s.cfg.Endpoints[1:]}, func(ev client.FollowEvent) error {
		if c.s.cfg.Output == "json" {
			b, err := json.Marshal(struct {
				client.WatchEvent
				Cursor string `json:"cursor"`
			}{ev.WatchEvent, ev.Cursor})
			if err != nil {
				return err
			}
			writeJSON(c.s.stdout, b)
			return nil
		}
		for _, ch := range ev.Changes {
			line := []string{string(ch.Kind), ch.Key.Key}
			if len(ch.Value) > 0 {
				var kv struct {
					Value    string `json:"value"`
					Revision uint64 `json:"revision"`
				}
				if json.Unmarshal(ch.Value, &kv) == nil {
					line = append(line, kv.Value, fmt.Sprint(kv.Revision))
				}
			}
			fmt.Fprintln(c.s.stdout, strings.Join(line, "\t"))
		}
		return nil
	})
	var we *client.WatchError
	switch {
	case c.ctx.Err() != nil:
		return exitOK // interrupted, or --timeout: the watch ends as asked
	case errors.As(err, &we):
		return c.failWith(client.Error{Code: we.Code, Message: we.Message + " (cursor " + we.Cursor + ")"}, exitCodeOf(we.Code, we.Status, false))
	}
	return c.netError(err)
}

// streamClient is a client of the first endpoint for a stream (a watch):
// the routed client bounds each request's wait for its answer's head, and
// a stream's answer never ends. The token and TLS are the command's.
func (c *cmd) streamClient() (*client.Client, error) {
	cfg := c.s.cfg
	var opts []client.ClientOption
	if cfg.Token != "" {
		opts = append(opts, client.WithBearerToken(cfg.Token))
	}
	if cfg.CACert != "" {
		opts = append(opts, client.WithTLS(client.TLSFiles{CA: cfg.CACert, CertFile: cfg.Cert, KeyFile: cfg.Key}))
	}
	return client.NewClient(cfg.Endpoints[0], opts...)
}
