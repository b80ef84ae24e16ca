package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A request to send: what it is, what answer means success.
type call struct {
	kind   string // "read" or "write": the histogram it lands in
	method string
	host   string // HOST:PORT of the endpoint
	path   string // with the query
	body   []byte
	expect int               // the status of success
	alt    int               // another status that counts as success (0: none)
	check  func([]byte) bool // nil: the status decides
	keys   []string          // a batch's keys (-client smart and grpc send them typed), or a put's or get's key (etcd)
	value  []byte            // a batch put's value, or a put's (etcd)
	// serializable: an etcd range that may be answered by any member
	// (-client grpc sends it as clientv3.WithSerializable).
	serializable bool
	// idem, when set, is the write's Idempotency-Key (-idempotency-keys).
	idem string
}

// backend turns the workloads' operations into HTTP requests of one system.
type backend interface {
	name() string
	ready(ep string) call
	put(ep, key string, value []byte) call
	get(ep, key string, linearizable bool) call
	createUser(ep, uid string, name []byte) (call, bool)
	createChannel(ep string, typ int, id string) (call, bool)
	addSubscribers(ep string, typ int, id string, uids []string) (call, bool)
	// batchGet reads keys in one request, linearizably; false: the system
	// has no such call.
	batchGet(ep string, keys []string) (call, bool)
	// batchPut writes value to every key in one request; false: the system
	// has no such call.
	batchPut(ep string, keys []string, value []byte) (call, bool)
	// errorCode names the error in a failed answer's body ("" if none).
	errorCode(body []byte) string
}

func newBackend(target string) (backend, error) {
	switch target {
	case "slotmeta":
		return slotmetaBackend{}, nil
	case "etcd":
		return etcdBackend{}, nil
	}
	return nil, fmt.Errorf("unknown -target %q (slotmeta or etcd)", target)
}

// ---- slotmeta: the REST API of openapi.yaml --------------------------------

type slotmetaBackend struct{}

func (slotmetaBackend) name() string { return "slotmeta" }

func (slotmetaBackend) ready(ep string) call {
	return call{kind: "read", method: "GET", host: hostOf(ep), path: "/readyz", expect: 200}
}

func (slotmetaBackend) put(ep, key string, value []byte) call {
	b := make([]byte, 0, len(value)+16)
	b = append(b, `{"value":"`...)
	b = append(b, value...) // alphanumeric: no escaping needed
	b = append(b, `"}`...)
	return call{kind: "write", method: "PUT", host: hostOf(ep), path: "/v1/kv/" + url.PathEscape(key), body: b, expect: 200}
}

func (slotmetaBackend) get(ep, key string, linearizable bool) call {
	p := "/v1/kv/" + url.PathEscape(key)
	if !linearizable {
		p += "?consistency=local"
	}
	return call{kind: "read", method: "GET", host: hostOf(ep), path: p, expect: 200}
}

func (slotmetaBackend) createUser(ep, uid string, name []byte) (call, bool) {
	b := make([]byte, 0, len(name)+len(uid)+24)
	b = append(b, `{"uid":"`...)
	b = append(b, uid...)
	b = append(b, `","name":"`...)
	b = append(b, name...)
	b = append(b, `"}`...)
	return call{kind: "write", method: "POST", host: hostOf(ep), path: "/v1/users", body: b, expect: 201}, true
}

func (slotmetaBackend) createChannel(ep string, typ int, id string) (call, bool) {
	b := fmt.Appendf(nil, `{"channel_type":%d,"channel_id":%q}`, typ, id)
	return call{kind: "write", method: "POST", host: hostOf(ep), path: "/v1/channels", body: b, expect: 201, alt: 409}, true
}

func (slotmetaBackend) addSubscribers(ep string, typ int, id string, uids []string) (call, bool) {
	b := make([]byte, 0, 16+len(uids)*40)
	b = append(b, `{"uids":[`...)
	for i, u := range uids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, u)
	}
	b = append(b, "]}"...)
	p := "/v1/channels/" + strconv.Itoa(typ) + "/" + url.PathEscape(id) + "/subscribers"
	return call{kind: "write", method: "POST", host: hostOf(ep), path: p, body: b, expect: 200}, true
}

// batchGet is POST /v1/batch/kv/get; it succeeds when every key was
// found (the preloaded keys all exist: an item without found is an error
// of its own).
func (slotmetaBackend) batchGet(ep string, keys []string) (call, bool) {
	b := make([]byte, 0, 16+len(keys)*24)
	b = append(b, `{"keys":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
	}
	b = append(b, "]}"...)
	n := len(keys)
	return call{kind: "read", method: "POST", host: hostOf(ep), path: "/v1/batch/kv/get", body: b, expect: 200, keys: keys,
		check: func(body []byte) bool { return bytes.Count(body, []byte(`"found":true`)) == n }}, true
}

// batchPut is POST /v1/batch/kv/write of puts; it succeeds when every
// operation was applied.
func (slotmetaBackend) batchPut(ep string, keys []string, value []byte) (call, bool) {
	b := make([]byte, 0, 16+len(keys)*(48+len(value)))
	b = append(b, `{"ops":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"op":"put","key":`...)
		b = strconv.AppendQuote(b, k)
		b = append(b, `,"value":"`...)
		b = append(b, value...) // alphanumeric: no escaping needed
		b = append(b, `"}`...)
	}
	b = append(b, "]}"...)
	n := len(keys)
	return call{kind: "write", method: "POST", host: hostOf(ep), path: "/v1/batch/kv/write", body: b, expect: 200, keys: keys, value: value,
		check: func(body []byte) bool { return bytes.Count(body, []byte(`"ok":true`)) == n }}, true
}

func (slotmetaBackend) errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil {
		return e.Error.Code
	}
	return ""
}

// ---- etcd: the v3 HTTP/JSON gateway (etcd 3.4: /v3/kv/...) -----------------

type etcdBackend struct{}

func (etcdBackend) name() string { return "etcd" }

func (etcdBackend) ready(ep string) call {
	return call{kind: "read", method: "GET", host: hostOf(ep), path: "/health", expect: 200,
		check: func(b []byte) bool { return bytes.Contains(b, []byte(`"true"`)) }}
}

var b64 = base64.StdEncoding

func (etcdBackend) put(ep, key string, value []byte) call {
	b := make([]byte, 0, 32+b64.EncodedLen(len(key))+b64.EncodedLen(len(value)))
	b = append(b, `{"key":"`...)
	b = b64.AppendEncode(b, []byte(key))
	b = append(b, `","value":"`...)
	b = b64.AppendEncode(b, value)
	b = append(b, `"}`...)
	return call{kind: "write", method: "POST", host: hostOf(ep), path: "/v3/kv/put", body: b, expect: 200, keys: []string{key}, value: value}
}

// hasKV: a range that found the key answers "kvs" (and "count"); a miss
// answers only the header, which we count as not_found.
func hasKV(b []byte) bool { return bytes.Contains(b, []byte(`"kvs"`)) }

func (etcdBackend) get(ep, key string, linearizable bool) call {
	b := make([]byte, 0, 48+b64.EncodedLen(len(key)))
	b = append(b, `{"key":"`...)
	b = b64.AppendEncode(b, []byte(key))
	b = append(b, `","serializable":`...)
	b = strconv.AppendBool(b, !linearizable)
	b = append(b, '}')
	return call{kind: "read", method: "POST", host: hostOf(ep), path: "/v3/kv/range", body: b, expect: 200, check: hasKV,
		keys: []string{key}, serializable: !linearizable}
}

func (etcdBackend) createUser(string, string, []byte) (call, bool) { return call{}, false }
func (etcdBackend) createChannel(string, int, string) (call, bool) { return call{}, false }
func (etcdBackend) addSubscribers(string, int, string, []string) (call, bool) {
	return call{}, false
}

// batchPut is one transaction of a put per key.
func (etcdBackend) batchPut(ep string, keys []string, value []byte) (call, bool) {
	b := make([]byte, 0, 16+len(keys)*(64+len(value)*2))
	b = append(b, `{"success":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"requestPut":{"key":"`...)
		b = b64.AppendEncode(b, []byte(k))
		b = append(b, `","value":"`...)
		b = b64.AppendEncode(b, value)
		b = append(b, `"}}`...)
	}
	b = append(b, "]}"...)
	return call{kind: "write", method: "POST", host: hostOf(ep), path: "/v3/kv/txn", body: b, expect: 200, keys: keys, value: value,
		check: func(body []byte) bool { return bytes.Contains(body, []byte(`"succeeded":true`)) }}, true
}

// batchGet is one transaction of a range per key (etcd's way to read many
// keys at once; its --max-txn-ops defaults to 128).
func (etcdBackend) batchGet(ep string, keys []string) (call, bool) {
	b := make([]byte, 0, 16+len(keys)*48)
	b = append(b, `{"success":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"requestRange":{"key":"`...)
		b = b64.AppendEncode(b, []byte(k))
		b = append(b, `"}}`...)
	}
	b = append(b, "]}"...)
	n := len(keys)
	return call{kind: "read", method: "POST", host: hostOf(ep), path: "/v3/kv/txn", body: b, expect: 200, keys: keys,
		check: func(body []byte) bool { return bytes.Count(body, []byte(`"kvs"`)) == n }}, true
}

func (etcdBackend) errorCode(body []byte) string {
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msg := e.Error
	if len(msg) > 48 {
		msg = msg[:48]
	}
	msg = strings.ReplaceAll(msg, " ", "_")
	if e.Code != 0 {
		return fmt.Sprintf("grpc%d:%s", e.Code, msg)
	}
	return msg
}

// hostOf is the HOST:PORT of an endpoint's base URL (validated to be
// http://HOST:PORT).
func hostOf(ep string) string { return strings.TrimSuffix(strings.TrimPrefix(ep, "http://"), "/") }

func (c call) url() string { return "http://" + c.host + c.path }
