package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for _, ep := range []string{"http://127.0.0.1:8081", "http://localhost:2379", "http://[::1]:80", "http://127.3.4.5:1"} {
		if err := loopbackOnly([]string{ep}); err != nil {
			t.Errorf("%s refused: %v", ep, err)
		}
	}
	for _, ep := range []string{"http://10.0.0.1:8081", "http://example.com:80", "https://127.0.0.1:1", "127.0.0.1:8081", "http://192.168.1.1"} {
		if loopbackOnly([]string{ep}) == nil {
			t.Errorf("%s accepted", ep)
		}
	}
}

func TestRequestsOfBothTargets(t *testing.T) {
	c := slotmetaBackend{}.put("http://127.0.0.1:1", "a/b", []byte("xyz"))
	if c.method != "PUT" || c.url() != "http://127.0.0.1:1/v1/kv/a%2Fb" || string(c.body) != `{"value":"xyz"}` || c.expect != 200 {
		t.Errorf("slotmeta put: %+v %s", c, c.body)
	}
	if c := (slotmetaBackend{}).get("http://h:1", "k", false); c.url() != "http://h:1/v1/kv/k?consistency=local" {
		t.Errorf("slotmeta local get: %s", c.url())
	}
	c, _ = slotmetaBackend{}.addSubscribers("http://h:1", 2, "ch", []string{"u1", "u2"})
	if c.url() != "http://h:1/v1/channels/2/ch/subscribers" || string(c.body) != `{"uids":["u1","u2"]}` {
		t.Errorf("subscribers: %s %s", c.url(), c.body)
	}
	e := etcdBackend{}.put("http://h:1", "k", []byte("v"))
	if e.url() != "http://h:1/v3/kv/put" || string(e.body) != `{"key":"aw==","value":"dg=="}` {
		t.Errorf("etcd put: %s %s", e.url(), e.body)
	}
	e = etcdBackend{}.get("http://h:1", "k", false)
	if string(e.body) != `{"key":"aw==","serializable":true}` || e.check([]byte(`{"header":{}}`)) || !e.check([]byte(`{"kvs":[{}],"count":"1"}`)) {
		t.Errorf("etcd serializable range: %s", e.body)
	}
	c, _ = slotmetaBackend{}.batchGet("http://h:1", []string{"a", "b"})
	if c.url() != "http://h:1/v1/batch/kv/get" || string(c.body) != `{"keys":["a","b"]}` || c.check([]byte(`{"items":[{"found":true},{"found":false}]}`)) ||
		!c.check([]byte(`{"items":[{"found":true},{"found":true}]}`)) {
		t.Errorf("slotmeta batch get: %s %s", c.url(), c.body)
	}
	c, _ = slotmetaBackend{}.batchPut("http://h:1", []string{"a"}, []byte("v"))
	if c.url() != "http://h:1/v1/batch/kv/write" || string(c.body) != `{"ops":[{"op":"put","key":"a","value":"v"}]}` || !c.check([]byte(`{"items":[{"ok":true}]}`)) {
		t.Errorf("slotmeta batch put: %s %s", c.url(), c.body)
	}
	e, _ = etcdBackend{}.batchPut("http://h:1", []string{"k"}, []byte("v"))
	if e.url() != "http://h:1/v3/kv/txn" || string(e.body) != `{"success":[{"requestPut":{"key":"aw==","value":"dg=="}}]}` {
		t.Errorf("etcd batch put: %s %s", e.url(), e.body)
	}
	e, _ = etcdBackend{}.batchGet("http://h:1", []string{"k"})
	if e.url() != "http://h:1/v3/kv/txn" || string(e.body) != `{"success":[{"requestRange":{"key":"aw=="}}]}` || !e.check([]byte(`{"responses":[{"response_range":{"kvs":[{}]}}]}`)) {
		t.Errorf("etcd batch get: %s %s", e.url(), e.body)
	}
	if got := (slotmetaBackend{}).errorCode([]byte(`{"error":{"code":"timeout","message":"m"}}`)); got != "timeout" {
		t.Errorf("slotmeta error code %q", got)
	}
	if got := (etcdBackend{}).errorCode([]byte(`{"error":"etcdserver: request timed out","code":14}`)); got != "grpc14:etcdserver:_request_timed_out" {
		t.Errorf("etcd error code %q", got)
	}
}

func TestReportRatiosAndTargets(t *testing.T) {
	mk := func(target, w string, c int, ops, p50, p99 float64) *Result {
		return &Result{Target: target, Workload: w, Concurrency: c, OpsPerSec: ops, Latency: latency{P50: p50, P99: p99}}
	}
	rs := []*Result{
		mk("slotmeta", "kv-put", 64, 5000, 10, 20), mk("etcd", "kv-put", 64, 1000, 12, 30),
		mk("slotmeta", "get-linearizable", 64, 1990, 1, 2), mk("etcd", "get-linearizable", 64, 1000, 1, 2),
		mk("slotmeta", "kv-put", 1, 500, 2, 3), mk("etcd", "kv-put", 1, 600, 1.5, 3),
		mk("slotmeta", "batch-put", 64, 300, 30, 60),
	}
	rs[len(rs)-1].KeysPerSec = 30000
	var out bytes.Buffer
	report(&out, rs, "slotmeta", "etcd")
	s := out.String()
	for _, want := range []string{
		"| kv-put | 64 | 5000 | 1000 | 5.00× |",
		"kv-put c=64 ≥ 1.2× etcd: 5.00× (CPU 0.000 vs 0.000 ms/op) — **met**",
		"get-linearizable c=64 ≥ 2× etcd: 1.99× — **not met**",
		"c=1 write (kv-put) p50 ≤ 0.8× etcd's: 2.00 vs 1.50 ms (1.33×) — **not met**",
		"batch-put c=64 ≥ 5× slotmeta's kv-put c=64 in keys/s: 30000 vs 5000 keys/s (6.00×) — **met**",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// A run through the route-aware client, or etcd's through its gRPC
	// client, is a target of its own.
	smart := mk("slotmeta", "kv-put", 64, 7500, 8, 15)
	smart.Client = "smart"
	out.Reset()
	report(&out, append(rs, smart), "slotmeta+smart", "slotmeta")
	if s := out.String(); !strings.Contains(s, "### slotmeta+smart\n") || !strings.Contains(s, "| kv-put | 64 | 7500 | 5000 | 1.50× |") {
		t.Errorf("the smart client's run is not reported apart:\n%s", s)
	}
	grpc := mk("etcd", "kv-put", 64, 2500, 9, 14)
	grpc.Client = "grpc"
	out.Reset()
	report(&out, append(rs, grpc), "slotmeta", "etcd+grpc")
	if s := out.String(); !strings.Contains(s, "### slotmeta vs etcd+grpc") || !strings.Contains(s, "| kv-put | 64 | 5000 | 2500 | 2.00× |") {
		t.Errorf("etcd's gRPC run is not compared apart:\n%s", s)
	}
}

// TestEtcdCallsCarryTheirKeys: the calls -client grpc sends through
// clientv3 name the key, value and consistency the gateway's JSON names.
func TestEtcdCallsCarryTheirKeys(t *testing.T) {
	be := etcdBackend{}
	if c := be.put("http://h:1", "k1", []byte("v1")); len(c.keys) != 1 || c.keys[0] != "k1" || string(c.value) != "v1" {
		t.Errorf("put: %+v", c)
	}
	if c := be.get("http://h:1", "k2", false); c.keys[0] != "k2" || !c.serializable {
		t.Errorf("serializable get: %+v", c)
	}
	if c := be.get("http://h:1", "k2", true); c.serializable {
		t.Errorf("linearizable get: %+v", c)
	}
	if c, _ := be.batchPut("http://h:1", []string{"a", "b"}, []byte("v")); len(c.keys) != 2 || string(c.value) != "v" || c.kind != "write" {
		t.Errorf("batch put: %+v", c)
	}
	if c, _ := be.batchGet("http://h:1", []string{"a", "b"}); len(c.keys) != 2 || c.kind != "read" {
		t.Errorf("batch get: %+v", c)
	}
}
