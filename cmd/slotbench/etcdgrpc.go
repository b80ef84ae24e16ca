package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// -client grpc (target etcd) sends the workload through etcd's own Go
// client (clientv3, gRPC), as a user of etcd 3.x does, instead of its
// HTTP/JSON gateway: one client per endpoint, each worker's requests to the
// endpoint the workload picked for it (as -client raw spreads them). The
// calls of etcdBackend carry their key, value and consistency beside the
// gateway's JSON; the answer is written back in the gateway's shape, so
// that the workloads' checks read it as they read a gateway answer.

// etcdClients are the gRPC clients, by endpoint host (HOST:PORT).
type etcdClients map[string]*clientv3.Client

func newEtcdClients(ctx context.Context, cfg *Config) (etcdClients, error) {
	cs := etcdClients{}
	for _, ep := range cfg.Endpoints {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Context: ctx,
			Logger: zap.NewNop(), MaxCallSendMsgSize: 2 << 20})
		if err != nil {
			cs.close()
			return nil, fmt.Errorf("-client grpc: %s: %w", ep, err)
		}
		cs[hostOf(ep)] = c
	}
	return cs, nil
}

func (cs etcdClients) close() {
	for _, c := range cs {
		_ = c.Close()
	}
}

// etcdTrip sends c through the client of its endpoint.
func (w *worker) etcdTrip(ctx context.Context, c call, body *bytes.Buffer) (status int, err error) {
	cli := w.cfg.etcd[c.host]
	if cli == nil {
		return 0, fmt.Errorf("-client grpc: no client of %s", c.host)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	body.Reset()
	switch c.path {
	case "/health":
		if _, err := cli.Status(ctx, cli.Endpoints()[0]); err != nil {
			return 0, err
		}
		body.WriteString(`{"health":"true"}`)
	case "/v3/kv/put":
		if _, err := cli.Put(ctx, c.keys[0], string(c.value)); err != nil {
			return 0, err
		}
	case "/v3/kv/range":
		var opts []clientv3.OpOption
		if c.serializable {
			opts = append(opts, clientv3.WithSerializable())
		}
		r, err := cli.Get(ctx, c.keys[0], opts...)
		if err != nil {
			return 0, err
		}
		if len(r.Kvs) > 0 {
			body.WriteString(`{"kvs":1}`)
		}
	case "/v3/kv/txn":
		ops := make([]clientv3.Op, len(c.keys))
		for i, k := range c.keys {
			if c.kind == "write" {
				ops[i] = clientv3.OpPut(k, string(c.value))
			} else {
				ops[i] = clientv3.OpGet(k)
			}
		}
		r, err := cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return 0, err
		}
		if r.Succeeded {
			body.WriteString(`"succeeded":true`)
		}
		for _, op := range r.Responses {
			if rr := op.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
				body.WriteString(`"kvs"`)
			}
		}
	default:
		return 0, fmt.Errorf("-client grpc: no gRPC call for %s", c.path)
	}
	return http.StatusOK, nil
}
