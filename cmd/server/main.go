// Command server runs one slotmeta node: the Raft replicas, the store, the
// REST API, /metrics and the console. Flags and SLOTMETA_* environment
// variables configure it (see -h); SIGINT/SIGTERM drain HTTP, then close the
// NodeHost, then the store.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"slotmeta"
	"slotmeta/internal/console"
	"slotmeta/internal/httpapi"
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/controller/balance"
	"slotmeta/internal/slotstore/controller/policy"
	"slotmeta/internal/slotstore/peer"
)

func main() {
	if err := run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "slotmeta:", err)
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string) error {
	o, err := parseOptions(args, getenv)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	joinToken, err := o.joinToken(getenv)
	if err != nil {
		return err
	}
	authn, err := o.authenticator(getenv)
	if err != nil {
		return err
	}
	if !authn.Enabled() && !isLoopback(o.APIAddr) {
		// Never serve the API beyond this machine without access control.
		return fmt.Errorf("no API tokens are configured (--tokens-file or SLOTMETA_TOKENS), so the API only listens on loopback; %s is not", o.APIAddr)
	}
	members, err := o.members()
	if err != nil {
		return err
	}
	secret, err := o.secret()
	if err != nil {
		return err
	}
	if secret == devSecret {
		log.Warn("no --cluster-secret given: using the built-in loopback-only secret")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	node, err := cluster.Start(cluster.Config{
		NodeID:               slotstore.NodeID(o.NodeID),
		DataDir:              o.DataDir,
		RaftAddr:             o.RaftAddr,
		APIAddr:              o.APIAddr,
		PeerAddr:             o.PeerAddr,
		InitialMembers:       members,
		JoinAddr:             o.Join,
		JoinToken:            joinToken,
		ClusterSecret:        secret,
		TLS:                  peer.TLSConfig{CAFile: o.TLSCA, CertFile: o.TLSCert, KeyFile: o.TLSKey},
		DisableHashSlotMoves: !o.EnableSlotMigration,
		DisableBalancer:      !o.Balancer,
		Quiesce:              o.Quiesce,
		BalanceInterval:      o.BalanceInterval,
		Balancer:             balance.Config{MaxTasks: o.BalancerMaxTasks, GroupsPerNode: o.GroupsPerNode},
		ProjectInterval:      o.ProjectInterval,
		Leadership:           policy.Leadership{HoldDown: o.LeaderHoldDown},
		ClusterID:            o.ClusterID,
		GroupCount:           o.Groups,
		ReplicationFactor:    o.ReplicationFactor,
		RTT:                  o.RTT,
		ElectionRTT:          o.ElectionRTT,
		HeartbeatRTT:         o.HeartbeatRTT,
		RaftWorkers:          o.RaftWorkers,
		Registerer:           reg,
		Logger:               log,
	})
	if err != nil {
		return err
	}
	handler, err := httpapi.New(httpapi.Config{
		Backend:      node,
		Registerer:   reg,
		Gatherer:     reg,
		Logger:       log,
		MaxBodyBytes: o.MaxBodyBytes,
		Console:      console.Handler(consoleSource{node}, authn),
		OpenAPI:      slotmeta.OpenAPI,
		Auth:         authn,
		Docs:         console.Docs(),
	})
	if err != nil {
		_ = node.Close()
		return err
	}
	ln, err := net.Listen("tcp", o.APIAddr)
	if err != nil {
		_ = node.Close()
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("slotmeta node started", "node", o.NodeID, "data", o.DataDir, "raft", o.RaftAddr,
		"api", "http://"+ln.Addr().String(), "console", "http://"+ln.Addr().String()+"/console",
		"access_control", authn.Enabled(), "cluster_tls", o.TLSCA != "")

	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := node.WaitReady(ctx); err != nil {
			log.Warn("node is not ready yet", "err", err)
			return
		}
		log.Info("node ready", "api", "http://"+ln.Addr().String(), "console", "http://"+ln.Addr().String()+"/console")
	}()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	failed := awaitStop(log, sig, serveErr)
	ctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("http drain incomplete", "err", err)
	}
	if err := node.Close(); err != nil {
		return errors.Join(failed, fmt.Errorf("close node: %w", err))
	}
	log.Info("stopped")
	return failed
}

// awaitStop waits for a stop signal or for the HTTP server to fail; a
// failure is returned, so that the process exits non-zero when it did not
// stop on request.
func awaitStop(log *slog.Logger, sig <-chan os.Signal, serveErr <-chan error) error {
	select {
	case s := <-sig:
		log.Info("shutting down", "signal", s.String())
		return nil
	case err := <-serveErr:
		log.Error("http server stopped", "err", err)
		return fmt.Errorf("http server stopped: %w", err)
	}
}

// consoleSource adapts the node to the console's Source: the node has every
// method but the slot map, which it reads off the routing snapshot.
type consoleSource struct{ *cluster.Node }

func (c consoleSource) SlotMap() (m [slotstore.HashSlotCount]slotstore.GroupID) {
	if t := c.Routes().Table(); t != nil {
		m = t.Groups()
	}
	return m
}
