// Command server runs one slotmeta node: the Raft replicas, the store, the
// REST API, /metrics and the console. Flags and SLOTMETA_* environment
// variables configure it (see -h); `slotmeta cert …` creates and lists
// certificates (package certs), `slotmeta ctl …` calls a cluster's API
// (package ctl), `slotmeta restore …` lays a data directory out from a
// backup (package restore), `slotmeta recover-controller …` rebuilds the
// controller group on stopped survivors after it lost a majority of its
// voters for good (recovercontroller.go); `--check-config` checks a
// configuration and prints what would run. SIGHUP reloads the tokens, the
// cluster secret file and the certificates (reload.go); SIGINT/SIGTERM
// drain HTTP, then close the NodeHost, then the store.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/slotmeta/slotmeta"
	"github.com/slotmeta/slotmeta/internal/audit"
	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/console"
	"github.com/slotmeta/slotmeta/internal/crashlog"
	"github.com/slotmeta/slotmeta/internal/ctl"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/httpapi"
	"github.com/slotmeta/slotmeta/internal/netguard"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

func main() {
	if code, ok := subcommand(os.Args[1:], os.Getenv, os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	if err := run(os.Args[1:], os.Getenv, os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0) // -h, --help: the usage was printed; asking for it is no failure
		}
		fmt.Fprintln(os.Stderr, "slotmeta:", err)
		os.Exit(1)
	}
}

// subcommand runs `slotmeta cert …`, `slotmeta ctl …`, `slotmeta
// restore …` and `slotmeta recover-controller …`, which are tools, not a
// node: ok false when args name none.
func subcommand(args []string, getenv func(string) string, stdout, stderr io.Writer) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "cert":
		return certs.Run(args[1:], stdout, stderr), true
	case "restore":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runRestore(ctx, args[1:], getenv, stdout, stderr), true
	case "recover-controller":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runRecoverController(ctx, args[1:], getenv, stdout, stderr), true
	case "ctl":
		// ^C ends the command's calls (exit 1), not the process mid-write.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return ctl.Run(ctx, args[1:], getenv, stdout, stderr), true
	}
	return 0, false
}

// version is the release, set at build time (make build: -ldflags
// "-X main.version=…", from git describe); else the module's build info.
var version = ""

// versionString names the binary's version, the release line it runs (what
// the cluster version compares: package clusterversion), Go version and
// platform.
func versionString() string {
	v := version
	if v == "" {
		v = "devel"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					v += " " + s.Value
				}
			}
		}
	}
	return fmt.Sprintf("slotmeta %s (release line %s; %s, %s/%s)", v, clusterversion.Binary, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// apiGrace is how long an API connection may stay open before a request on
// it authenticated: a health checker's connection is closed after it, a
// client's with credentials lives up to the idle timeout.
const apiGrace = 10 * time.Second

func run(args []string, getenv func(string) string, stdout io.Writer) error {
	o, err := parseOptions(args, getenv)
	if err != nil {
		return err
	}
	if o.Version {
		fmt.Fprintln(stdout, versionString())
		return nil
	}
	if o.CheckConfig {
		return checkConfig(o, getenv, stdout)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	log := newLogger(os.Stderr, level)
	p, err := o.plan(getenv)
	if err != nil {
		return err
	}
	for _, w := range p.sec.warnings {
		log.Warn("INSECURE (--insecure): " + w)
	}
	if p.secret == "" {
		log.Info("no --cluster-secret given (loopback): peer RPC uses a secret generated at bootstrap, kept in the data directory")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slotmeta_build_info", Help: "1, labelled with the node's version (slotmeta --version).",
			ConstLabels: prometheus.Labels{"version": versionString()}}, func() float64 { return 1 }))
	log.Info("slotmeta", "version", versionString())
	// A SIGHUP while the node starts waits for it (a reload then) instead of
	// ending the process; SIGINT and SIGTERM keep their default (exit) until
	// the node runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)

	// Connections are bounded on every listener (package netguard), from
	// the descriptor limit Go raised to the hard limit at start.
	budget := netguard.ProcessBudget()
	conns := &netguard.Collector{}
	reg.MustRegister(conns)
	log.Info("connection bounds", "budget", budget.String())
	cfg := p.cluster
	cfg.Registerer, cfg.Logger, cfg.Conns, cfg.ConnMetrics = reg, log, budget, conns
	// The crash output goes to the data directory too: the next process
	// names what ended this one (a replica's replay that keeps crashing
	// the process is not started again: replicas/startmarks.go).
	if cfg.LastCrash, err = crashlog.Keep(o.DataDir); err != nil {
		log.Error("the crash output is not kept in the data directory", "err", err)
	} else if cfg.LastCrash != "" {
		log.Warn("the previous process on this data directory crashed", "crash", cfg.LastCrash,
			"output", filepath.Join(o.DataDir, crashlog.PrevFile))
	}
	node, err := cluster.Start(cfg)
	if err != nil {
		return err
	}
	if files := node.TLSFiles(); files != nil {
		p.apiTLS = files // one load for every listener
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "slotmeta", Subsystem: "tls",
			Name: "certificate_not_after_seconds", Help: "When the node certificate loaded now expires (Unix seconds)."},
			func() float64 { return float64(files.Leaf().NotAfter.Unix()) }))
	}
	rl := &reloader{o: o, getenv: getenv, log: log, authn: p.authn, node: node, apiTLS: p.apiTLS, sec: p.sec, loadedAt: time.Now()}
	recorder := audit.New(node, log)
	limiter := auth.NewLimiter(auth.LimiterConfig{Logger: log})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "slotmeta", Subsystem: "auth", Name: "failures_total",
		Help: "Failed authentications (API and console), before the failure limiter."}, func() float64 { return float64(limiter.Failures()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "slotmeta", Subsystem: "auth", Name: "lockouts_total",
			Help: "Failed authentications after which their source was out of budget (refused 429 until it refills)."},
			func() float64 { return float64(limiter.Lockouts()) }))
	stopping := make(chan struct{}) // closed when HTTP starts to drain: the watch streams end
	handler, err := httpapi.New(httpapi.Config{
		Stopping:     stopping,
		Backend:      node,
		Registerer:   reg,
		Gatherer:     reg,
		Logger:       log,
		MaxBodyBytes: o.MaxBodyBytes,
		Console: func(api http.Handler) http.Handler {
			return console.Handler(console.Config{Source: node.Operator(), Auth: p.authn, Limiter: limiter, Audit: recorder,
				Security: rl.status, Changes: node.Watches().Log, Version: versionString(), API: api})
		},
		OpenAPI:  slotmeta.OpenAPI,
		Auth:     p.authn,
		Limiter:  limiter,
		Audit:    recorder,
		Security: rl.status,
		Docs:     console.Docs(),
	})
	if err != nil {
		_ = node.Close()
		return err
	}
	// A connection that has not authenticated is closed after apiGrace
	// (auth proves it); one source holds a quarter of the API's share.
	ln, err := netguard.Listen(o.APIAddr, netguard.Config{Name: "api", MaxConns: budget.API.Max, MaxPerSource: budget.API.PerSource,
		Unproven: apiGrace, Logger: log})
	if err != nil {
		_ = node.Close()
		return err
	}
	conns.Add(ln)
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug), // failed handshakes of scanners
		ConnContext:       netguard.ConnContext,
		ConnState:         netguard.ConnState, // the grace holds while a request is served
	}
	srv.RegisterOnShutdown(func() { close(stopping) })
	serveErr := make(chan error, 1)
	// net/http's own answers to unparsable requests as the error JSON
	// (over TLS: HTTP/1.1, TLS terminated by httpapi).
	if p.apiTLS != nil {
		// Client certificates are optional: a token is the alternative.
		tlsLn := httpapi.CannedErrorsTLS(ln, p.apiTLS.ServerConfig(tls.VerifyClientCertIfGiven), srv.ReadHeaderTimeout)
		go func() { serveErr <- srv.Serve(tlsLn) }()
	} else {
		go func() { serveErr <- srv.Serve(httpapi.CannedErrors(ln)) }()
	}
	base := p.sec.scheme() + "://" + ln.Addr().String()
	log.Info("slotmeta node started", "node", o.NodeID, "data", o.DataDir, "raft", o.RaftAddr,
		"api", base, "console", base+"/console", "access_control", p.authn.Enabled(), "cluster_tls", p.sec.tls,
		"insecure", o.Insecure)

	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := node.WaitReady(ctx); err != nil {
			log.Warn("node is not ready yet", "err", err)
			return
		}
		log.Info("node ready", "api", base, "console", base+"/console")
	}()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	failed := awaitStop(log, sig, hup, serveErr, rl.reload)
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
// stop on request. A signal on hup reloads (on this goroutine: one reload
// at a time).
func awaitStop(log *slog.Logger, sig, hup <-chan os.Signal, serveErr <-chan error, reload func() error) error {
	for {
		select {
		case <-hup:
			if err := reload(); err != nil {
				log.Error("reload failed; the previous credentials stay", "err", err)
			}
		case s := <-sig:
			log.Info("shutting down", "signal", s.String())
			return nil
		case err := <-serveErr:
			log.Error("http server stopped", "err", err)
			return fmt.Errorf("http server stopped: %w", err)
		}
	}
}
