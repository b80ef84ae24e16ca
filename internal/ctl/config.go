package ctl

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultEndpoint is the API of `make run`'s one-node cluster.
const DefaultEndpoint = "http://127.0.0.1:8080"

// config is what every command needs to reach the API: the global flags,
// each with an environment fallback (a flag given wins).
type config struct {
	Endpoints []string      // base URLs, tried in order while a connection cannot be made
	Token     string        // bearer token
	CACert    string        // CA of the nodes' certificates (https endpoints)
	Cert, Key string        // client certificate and key (with CACert)
	Output    string        // "table" or "json"
	Timeout   time.Duration // bounds the whole command, every call included
}

// globalFlags are the flags every command takes, before or after it.
type globalFlags struct {
	fs        *flag.FlagSet
	endpoints string
	cfg       config
}

// globalEnv names each global flag's environment variable; aliases share one.
var globalEnv = []struct {
	names []string
	env   string
}{
	{[]string{"endpoints"}, "SLOTMETA_ENDPOINTS"},
	{[]string{"token"}, "SLOTMETA_TOKEN"},
	{[]string{"cacert"}, "SLOTMETA_CACERT"},
	{[]string{"cert"}, "SLOTMETA_CERT"},
	{[]string{"key"}, "SLOTMETA_KEY"},
	{[]string{"o", "output"}, "SLOTMETA_OUTPUT"},
	{[]string{"timeout"}, "SLOTMETA_TIMEOUT"},
}

func newGlobalFlags() *globalFlags {
	g := &globalFlags{fs: flag.NewFlagSet("slotmeta ctl", flag.ContinueOnError)}
	g.cfg.Output = "table"
	fs := g.fs
	fs.SetOutput(discard)
	fs.StringVar(&g.endpoints, "endpoints", DefaultEndpoint, "comma-separated base `URLs` of nodes, tried in order while one cannot be connected to (env SLOTMETA_ENDPOINTS)")
	fs.StringVar(&g.cfg.Token, "token", "", "bearer `token` (env SLOTMETA_TOKEN)")
	fs.StringVar(&g.cfg.CACert, "cacert", "", "CA certificate `file` (PEM) the nodes' HTTPS certificates are checked against (env SLOTMETA_CACERT)")
	fs.StringVar(&g.cfg.Cert, "cert", "", "client certificate `file` (PEM), with --key and --cacert (env SLOTMETA_CERT)")
	fs.StringVar(&g.cfg.Key, "key", "", "client key `file` (PEM) of --cert (env SLOTMETA_KEY)")
	out := &enumValue{p: &g.cfg.Output, allowed: []string{"table", "json"}}
	fs.Var(out, "o", "output `format`: table or json (env SLOTMETA_OUTPUT)")
	fs.Var(out, "output", "the same as -o `format`")
	fs.DurationVar(&g.cfg.Timeout, "timeout", 10*time.Second, "deadline of the whole command (env SLOTMETA_TIMEOUT)")
	return g
}

// finish fills what no flag set from the environment and checks the
// result; set holds the names of the flags given on the command line.
func (g *globalFlags) finish(set map[string]bool, env func(string) string) (config, error) {
	for _, e := range globalEnv {
		v := env(e.env)
		if v == "" || slices.ContainsFunc(e.names, func(n string) bool { return set[n] }) {
			continue
		}
		if err := g.fs.Lookup(e.names[0]).Value.Set(v); err != nil {
			return config{}, fmt.Errorf("%s=%q: %v", e.env, v, err)
		}
	}
	cfg := g.cfg
	cfg.Endpoints = nil
	for _, e := range strings.Split(g.endpoints, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return config{}, fmt.Errorf("endpoint %q: want a base URL like %s", e, DefaultEndpoint)
		}
		cfg.Endpoints = append(cfg.Endpoints, strings.TrimSuffix(e, "/"))
	}
	switch {
	case len(cfg.Endpoints) == 0:
		return config{}, errors.New("no endpoint given")
	case cfg.Timeout <= 0:
		return config{}, errors.New("--timeout must be positive")
	case (cfg.Cert == "") != (cfg.Key == ""):
		return config{}, errors.New("--cert and --key go together")
	case cfg.Cert != "" && cfg.CACert == "":
		return config{}, errors.New("--cert needs --cacert")
	}
	return cfg, nil
}

// enumValue is a string flag that takes one of a few values.
type enumValue struct {
	p       *string
	allowed []string
}

func (e *enumValue) String() string {
	if e == nil || e.p == nil {
		return ""
	}
	return *e.p
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("want %s", strings.Join(e.allowed, " or "))
	}
	*e.p = s
	return nil
}
