package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
)

// slotbench noop serves the floor a REST API's single-key write cannot go
// under on this machine: PUT /v1/kv/{key} routed by chi, its JSON body
// decoded and a JSON answer written, and nothing else — no Raft, no store,
// no peer. kv-put against it (-endpoints its address) measures what the
// HTTP and JSON of a request cost, the yardstick of issue #28's "≥ 33 % of
// a no-op chi/JSON server".

// noopHandler is the no-op API.
func noopHandler() http.Handler {
	var rev atomic.Uint64
	r := chi.NewRouter()
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"status":"ok"}`) })
	r.Put("/v1/kv/{key}", func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Value string `json:"value"`
		}
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&body); err != nil {
			http.Error(w, `{"error":{"code":"invalid_argument","message":"body","retryable":false}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Key      string `json:"key"`
			Value    string `json:"value"`
			Revision uint64 `json:"revision"`
		}{chi.URLParam(req, "key"), body.Value, rev.Add(1)})
	})
	return r
}

// noopCmd serves noopHandler on -addr until interrupted.
func noopCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("slotbench noop", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "loopback address to serve on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if err := loopbackOnly([]string{"http://" + l.Addr().String()}); err != nil {
		_ = l.Close()
		return err
	}
	srv := &http.Server{Handler: noopHandler(), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(out, "slotbench noop: serving http://%s\n", l.Addr())
	if err := srv.Serve(l); err != http.ErrServerClosed {
		return err
	}
	return nil
}
