package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/client/routed"
)

// -client smart sends the workload through the route-aware Go client
// (client/routed) instead of slotbench's own connections: every keyed
// request goes to its group's leader, batches are split by leader node,
// and the client's retries, idempotency keys and net/http transport are
// part of what is measured — as an application using it would pay them.

// newSmart starts a routed client of cfg's endpoints and waits for its
// first view of the cluster.
func newSmart(ctx context.Context, cfg *Config) (*routed.Client, error) {
	rc, err := routed.New(routed.Config{Endpoints: cfg.Endpoints, Token: cfg.Token, AttemptTimeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	if err := rc.Refresh(ctx); err != nil {
		_ = rc.Close()
		return nil, fmt.Errorf("-client smart: the first route refresh: %w", err)
	}
	return rc, nil
}

// smartTrip sends c through the routed client, with the body of its
// answer in body (a batch's typed answer encoded again, so the workload's
// check reads it as it reads a raw answer).
func (w *worker) smartTrip(ctx context.Context, c call, body *bytes.Buffer) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	body.Reset()
	switch c.path {
	case "/v1/batch/kv/get":
		r, err := w.cfg.smart.BatchGetKV(ctx, c.keys, nil)
		if err != nil {
			return 0, err
		}
		return http.StatusOK, json.NewEncoder(body).Encode(r)
	case "/v1/batch/kv/write":
		put, v := "put", string(c.value)
		ops := make([]client.KVBatchOp, len(c.keys))
		for i := range c.keys {
			ops[i] = client.KVBatchOp{Op: &put, Key: &c.keys[i], Value: &v}
		}
		r, err := w.cfg.smart.BatchWriteKV(ctx, ops, routed.NewIdempotencyKey())
		if err != nil {
			return 0, err
		}
		return http.StatusOK, json.NewEncoder(body).Encode(r)
	}
	var rb io.Reader
	if len(c.body) > 0 {
		rb = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, "http://"+c.host+c.path, rb)
	if err != nil {
		return 0, err
	}
	if rb != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.cfg.Token)
	}
	resp, err := w.cfg.smart.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = body.ReadFrom(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, err
}
