package ctl

import (
	"errors"
	"strconv"

	"github.com/slotmeta/slotmeta/client"
)

// kv get KEY: GET /v1/kv/{key}; kv get --prefix P | --from K --to K: the
// listing (kvList).
func kvGet(c *cmd) int {
	cons := c.consistency()
	l := c.kvListFlags()
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	if listing(c) {
		if len(pos) > 0 {
			return c.usageError("KEY and --prefix/--from/--to exclude each other")
		}
		return kvList(c, l, cons)
	}
	if len(pos) != 1 {
		return c.usageError("missing KEY (or --prefix/--from/--to to list keys)")
	}
	r, err := c.api.GetKVWithResponse(c.ctx, pos[0], &client.GetKVParams{Consistency: (*client.GetKVParamsConsistency)(cons)})
	return reply(c, r, err, func(t *table) {
		kv := r.JSON200
		t.header("KEY", "VALUE", "REVISION")
		t.row(kv.Key, kv.Value, kv.Revision)
	})
}

// ifMatch is the --if-match flag: a revision, or * (the key exists);
// *v stays nil without it, as the generated parameters want it.
func (c *cmd) ifMatch() **string {
	var v *string
	c.fs.Func("if-match", "write only at revision `REV` (or *: only if the key exists); else exit 4", func(s string) error {
		if s != "*" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 1 {
				return errors.New("want a revision (a positive number) or *")
			}
			s = strconv.Quote(strconv.FormatInt(n, 10)) // the entity tag "<revision>"
		}
		v = &s
		return nil
	})
	return &v
}

// kv put KEY VALUE: PUT /v1/kv/{key}, a compare-and-set under --if-match
// or --if-absent.
func kvPut(c *cmd) int {
	ifMatch := c.ifMatch()
	ifAbsent := c.fs.Bool("if-absent", false, "create only: exit 4 if the key exists")
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	params := client.PutKVParams{IfMatch: *ifMatch}
	if *ifAbsent {
		if *ifMatch != nil {
			return c.usageError("--if-match and --if-absent exclude each other")
		}
		star := client.PutKVParamsIfNoneMatch("*")
		params.IfNoneMatch = &star
	}
	r, err := c.api.PutKVWithResponse(c.ctx, pos[0], &params, client.KVWrite{Value: pos[1]}, c.idempotent)
	return reply(c, r, err, func(t *table) {
		kv := r.JSON200
		t.header("KEY", "REVISION")
		t.row(kv.Key, kv.Revision)
	})
}

// kv delete KEY: DELETE /v1/kv/{key}. The API answers 204 without a
// revision, so there is none to print: the JSON is {"key","deleted"}.
func kvDelete(c *cmd) int {
	ifMatch := c.ifMatch()
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.DeleteKVWithResponse(c.ctx, pos[0], &client.DeleteKVParams{IfMatch: *ifMatch}, c.idempotent)
	if _, code, ok := answered(c, r, err); !ok {
		return code
	}
	// The revision the delete was applied at, as a put prints its own.
	rev, err := strconv.ParseUint(r.HTTPResponse.Header.Get("X-Revision"), 10, 64)
	if err != nil {
		return c.deleted(map[string]any{"key": pos[0]}, []string{"KEY"}, pos[0])
	}
	return c.deleted(map[string]any{"key": pos[0], "revision": rev}, []string{"KEY", "REVISION"}, pos[0], rev)
}

// deleted prints that something was deleted: what names it, and
// "deleted": true.
func (c *cmd) deleted(v map[string]any, headers []string, cells ...any) int {
	v["deleted"] = true
	return c.showValue(v, func(t *table) {
		t.header(append(headers, "DELETED")...)
		t.row(append(cells, true)...)
	})
}

// kv batch-get KEY...: POST /v1/batch/kv/get. A key not found is an
// answer, not an error; a key the server could not read makes the exit
// code its error's.
func kvBatchGet(c *cmd) int {
	cons := c.consistency()
	pos, code, ok := c.parse()
	if !ok {
		return code
	}
	r, err := c.api.BatchGetKVWithResponse(c.ctx, &client.BatchGetKVParams{Consistency: (*client.BatchGetKVParamsConsistency)(cons)},
		client.BatchKeys{Keys: pos})
	return replyBatch(c, r, err, func(t *table) {
		t.header("KEY", "FOUND", "VALUE", "REVISION", "ERROR")
		for _, it := range r.JSON200.Items {
			t.row(it.Key, it.Found, it.Value, it.Revision, itemError(it.Error))
		}
	})
}

// itemError is one item's error in a table cell.
func itemError(e *client.Error) string {
	if e == nil {
		return ""
	}
	return string(e.Code) + ": " + e.Message
}
