package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// kvKeys are the business keys the clients share. echo-121 shares alpha's
// hash slot (106): the watch of alpha alone (chaos_test.go) then has
// changes it does not want in its slot, between those it wants.
var kvKeys = []string{"alpha", "bravo", "charlie", "delta", "echo-121"}

// kvSeen is a value and revision one client read or wrote.
type kvSeen struct {
	value string
	rev   uint64
}

// kvJSON is the body of a business key (GET, and PUT's answer).
type kvJSON struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Revision uint64 `json:"revision"`
}

func kvPath(key string) string { return "/v1/kv/" + url.PathEscape(key) }

// runKVClient reads and writes the shared keys until ctx ends: plain puts,
// compare-and-set puts (If-Match with a revision it saw, If-None-Match: *),
// deletes (some under If-Match) and reads.
func (c *client) runKVClient(ctx context.Context) {
	seen := map[string]kvSeen{}
	keys := c.keys
	if keys == nil {
		keys = kvKeys
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		c.pause()
		key := keys[c.rng.Intn(len(keys))]
		last, known := seen[key]
		switch p := c.rng.Intn(100); {
		case p < 35:
			if out, ok := c.kvGetAt(c.tc.anyURL(c.rng), key, "kv.get"); ok && out.Out == outOK {
				seen[key] = kvSeen{out.Value, out.Revision}
			} else if ok {
				delete(seen, key)
			}
		case p < 85:
			in := kvInput{Op: kvPut, Key: key, Value: fmt.Sprintf("c%d-%d", c.id, seq)}
			kind := "kv.put"
			switch {
			case p < 65 && known:
				in.Cond, in.MatchRev, in.MatchValue, kind = condIfMatch, last.rev, last.value, "kv.cas"
			case p >= 75:
				in.Cond, kind = condIfNoneMatch, "kv.create"
			}
			if v, ok := c.kvWrite(kind, in); ok {
				seen[key] = v
			}
		default:
			in := kvInput{Op: kvDelete, Key: key}
			kind := "kv.delete"
			if known && c.rng.Intn(2) == 0 {
				in.Cond, in.MatchRev, in.MatchValue, kind = condIfMatch, last.rev, last.value, "kv.cas_delete"
			}
			c.kvWrite(kind, in)
			delete(seen, key)
		}
	}
}

// kvGetAt reads key through base and records the read. It reports whether
// the answer was definite (a read without one has no effect and is left
// out of the history).
func (c *client) kvGetAt(base, key, kind string) (kvOutput, bool) {
	call := c.rec.now()
	a := c.do(base, request{method: "GET", path: kvPath(key)})
	ret := c.rec.now()
	out, unexpected := classify(a.code)
	if out == outUnknown {
		c.backoff = a.retryAfter()
	}
	if unexpected || out == outRefused {
		c.rec.fail("GET %s: unexpected %d %s", kvPath(key), a.code, a.body)
		return kvOutput{}, false
	}
	c.rec.count(kind, out)
	if out == outUnknown {
		return kvOutput{}, false
	}
	o := kvOutput{Out: out}
	if out == outOK {
		var body kvJSON
		if err := json.Unmarshal(a.body, &body); err != nil || body.Revision == 0 {
			c.rec.fail("GET %s: undecodable answer %q", kvPath(key), a.body)
			return kvOutput{}, false
		}
		if etag := a.header.Get("ETag"); etag != strconv.Quote(strconv.FormatUint(body.Revision, 10)) {
			c.rec.fail("GET %s: ETag %s for revision %d", kvPath(key), etag, body.Revision)
		}
		o.Value, o.Revision = body.Value, body.Revision
	}
	c.rec.addKV(porcupine.Operation{ClientId: c.id, Input: kvInput{Op: kvGet, Key: key}, Call: call, Output: o, Return: ret})
	return o, true
}

// kvWrite performs a put or delete and records it; for a put that
// succeeded it returns the value and revision written.
func (c *client) kvWrite(kind string, in kvInput) (kvSeen, bool) {
	r := request{method: "PUT", path: kvPath(in.Key)}
	if in.Op == kvDelete {
		r.method = "DELETE"
	} else {
		b, _ := json.Marshal(map[string]string{"value": in.Value})
		r.body = string(b)
	}
	switch in.Cond {
	case condIfMatch:
		r.ifMatch = strconv.Quote(strconv.FormatUint(in.MatchRev, 10))
	case condIfNoneMatch:
		r.ifNoneMatch = true
	}
	c.maybeIdem(&r)
	w := c.write(r)
	c.rec.count(kind, w.out)
	o := kvOutput{Out: w.out}
	if in.Op == kvPut && w.out == outNotFound {
		c.rec.fail("%s %s: 404 %s", r.method, r.path, w.ans.body)
		o.Out = outUnknown
	}
	if in.Op == kvPut && w.out == outOK {
		var body kvJSON
		if err := json.Unmarshal(w.ans.body, &body); err != nil || body.Value != in.Value || body.Key != in.Key || body.Revision == 0 {
			c.rec.fail("%s %s: answer %q", r.method, r.path, w.ans.body)
		}
		o.Revision = body.Revision
	}
	c.rec.addKV(porcupine.Operation{ClientId: c.id, Input: in, Call: w.call, Output: o, Return: w.ret})
	return kvSeen{in.Value, o.Revision}, in.Op == kvPut && o.Out == outOK
}
