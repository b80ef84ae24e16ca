package httpapi

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// kvItem is a business key in a listing: its value is left out when the
// listing asked for keys only.
type kvItem struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	Revision uint64 `json:"revision"`
}

func kvItemOut(kv *meta.KV) kvItem { return kvItem(kvOut(kv)) }

// listKV is GET /v1/kv?prefix=&start=&end=&keys_only=&cursor=&limit=&consistency=:
// the business keys that begin with prefix and lie in [start, end) (each
// optional), across every hash slot in (hash slot, key) order — a key lives
// in the hash slot of its hash, so a listing is in key order within a slot
// only — walked with one ScanKV query per run of hash slots owned by one
// group (slotWalk). Each group seeks to the bounds in every slot it owns: a
// prefix costs what it matches and one seek a slot, not a scan of every
// key. A cursor continues a listing only with the same bounds (it names a
// position, not the bounds). Pages end at limit keys or maxPageBytes.
func (a kvRoutes) listKV(w http.ResponseWriter, r *http.Request) error {
	q, err := queryParams(r)
	if err != nil {
		return err
	}
	var bounds [3]string
	for i, name := range []string{"prefix", "start", "end"} {
		v, _, err := single(q, name)
		if err != nil {
			return err
		}
		if p := boundProblem(v); p != "" {
			return invalidField(name, p)
		}
		bounds[i] = v
	}
	prefix, start, end := bounds[0], bounds[1], bounds[2]
	if end != "" && end <= start {
		return invalidField("end", "must sort after start")
	}
	keysOnly, err := boolParam(q, "keys_only")
	if err != nil {
		return err
	}
	return slotWalk[meta.KVPage, *meta.KV, kvItem]{name: "ScanKV", out: kvItemOut, valid: keyProblem,
		keyOf: func(kv *meta.KV) string { return kv.Key },
		size:  func(kv *meta.KV) int { return len(kv.Key) + len(kv.Value) },
		query: func(run slotRun) meta.For[*meta.KVPage] {
			return &meta.ScanKV{FromSlot: run.from, ToSlot: run.to, Prefix: prefix, Start: start, End: end,
				AfterKey: run.after, KeysOnly: keysOnly, Limit: run.want}
		}, rows: func(p *meta.KVPage) ([]*meta.KV, bool) { return p.KVs, p.More }}.serve(a.api, w, r)
}

// boundProblem says what is wrong with a listing's prefix, start or end
// ("" if nothing): what keyProblem says of a key, but "" (no bound) and
// "." or ".." (a prefix of keys that begin with dots) are bounds too.
func boundProblem(s string) string {
	if s == "" || s == "." || s == ".." {
		return ""
	}
	return keyProblem(s)
}
