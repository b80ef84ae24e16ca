package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// options are the server's flags; every flag also reads SLOTMETA_<NAME>
// (upper case, dashes as underscores) when not given on the command line.
type options struct {
	NodeID              uint64
	DataDir             string
	BackupDir           string
	APIAddr             string
	RaftAddr            string
	PeerAddr            string
	InitialMembers      string
	Join                string
	JoinToken           string
	ClusterSecret       string
	ClusterID           string
	Groups              int
	ReplicationFactor   int
	RTT                 time.Duration
	ElectionRTT         uint64
	HeartbeatRTT        uint64
	RaftWorkers         int
	ApplyWorkers        int
	CheckEvery          time.Duration
	CheckPace           int
	DiskReserve         int64
	LogLevel            string
	MaxBodyBytes        int64
	ShutdownTimeout     time.Duration
	EnableSlotMigration bool
	Balancer            bool
	Quiesce             bool
	LeaseReads          bool
	BalanceInterval     time.Duration
	ManualPin           time.Duration
	BalancerMaxTasks    int
	GroupsPerNode       int
	ProjectInterval     time.Duration
	WatchRecords        int
	WatchAge            time.Duration
	MaxWatchers         int
	LeaderHoldDown      time.Duration
	TokensFile          string
	TLSCA               string
	TLSCert             string
	TLSKey              string
	CertsDir            string
	Insecure            bool
	ClusterSecretFile   string
	SecretOverlap       time.Duration
	CheckConfig         bool
	Version             bool
}

func parseOptions(args []string, getenv func(string) string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("slotmeta", flag.ContinueOnError)
	fs.Uint64Var(&o.NodeID, "node-id", 1, "this node's id (positive, unique in the cluster)")
	fs.StringVar(&o.DataDir, "data-dir", "./data", "directory for Raft logs and the store")
	fs.StringVar(&o.BackupDir, "backup-dir", "", "directory the backups this node is asked for are written under, one directory each (default <data-dir>/backups)")
	fs.StringVar(&o.APIAddr, "api-addr", "127.0.0.1:8080", "HTTP API and console listen address")
	fs.StringVar(&o.RaftAddr, "raft-addr", "127.0.0.1:9080", "Raft listen address (must not change across restarts)")
	fs.StringVar(&o.PeerAddr, "peer-addr", "127.0.0.1:9180", "peer RPC address advertised to other nodes")
	fs.StringVar(&o.InitialMembers, "initial-members", "", "founding members as id=raft/api/peer,… (default: this node alone)")
	fs.StringVar(&o.Join, "join", "", "join a running cluster through this node's API address (host:port)")
	fs.StringVar(&o.JoinToken, "join-token", "", "admin token for --join when the cluster's API requires tokens (default: an admin token of this node's own --tokens-file/SLOTMETA_TOKENS)")
	fs.StringVar(&o.ClusterSecret, "cluster-secret", "", "shared secret every peer request carries (required beyond loopback)")
	fs.StringVar(&o.ClusterID, "cluster-id", "slotmeta", "cluster id written at bootstrap")
	fs.IntVar(&o.Groups, "groups", 0, "slot groups at bootstrap (1..256; default: founding members ÷ replication factor, at least 1)")
	fs.IntVar(&o.ReplicationFactor, "replication-factor", 3, "replicas per group (capped by the node count)")
	fs.DurationVar(&o.RTT, "rtt", 100*time.Millisecond, "Raft tick (ADR 0018: idle groups cost a third less than at 50ms)")
	fs.Uint64Var(&o.ElectionRTT, "election-rtt", 5, "election timeout in ticks")
	fs.Uint64Var(&o.HeartbeatRTT, "heartbeat-rtt", 1, "leader heartbeat interval in ticks (below half the election timeout)")
	fs.IntVar(&o.ApplyWorkers, "apply-workers", 4, "the Raft engine's commit workers and apply workers, each (1..16): each visits its share of the groups every 200 ms besides its work")
	fs.DurationVar(&o.CheckEvery, "check-every", time.Hour, "how often the controller leader checks each slot group's replicas against each other, one group at a time (negative: only when an operator asks: POST /v1/cluster/groups/{id}/check)")
	fs.IntVar(&o.CheckPace, "check-bytes-per-second", 8<<20, "how fast a state check hashes a replica's rows on this node")
	fs.Int64Var(&o.DiskReserve, "disk-reserve-bytes", 256<<20, "space kept free in the data directory's filesystem: under it the node refuses the writes it would lead (no_space) until space is freed (negative: no guard)")
	fs.IntVar(&o.RaftWorkers, "raft-workers", 0, "Raft step workers and log shards; groups on one worker share a log fsync (default for a new data dir: one per 4 cores, 1..8; fixed when the data dir is created)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 1<<20, "largest accepted request body")
	fs.BoolVar(&o.EnableSlotMigration, "enable-hash-slot-migration", true, "allow moving hash slots between groups, live (migrations, splits, merges); =false turns them off")
	fs.BoolVar(&o.LeaseReads, "lease-reads", true, "a group's leader answers linearizable reads from its own state for a lease after a quorum confirmed it (sized by the shortest --rtt/--election-rtt among the group's nodes); false: a ReadIndex round for every read")
	fs.BoolVar(&o.Quiesce, "quiesce", true, "let idle slot groups stop their heartbeats (woken when their leader cannot be reached); =false keeps them beating")
	fs.BoolVar(&o.Balancer, "balancer", true, "run the balancer on this node while it leads the controller (pause it cluster-wide with PUT /v1/cluster/balancer)")
	fs.DurationVar(&o.BalanceInterval, "balancer-interval", 5*time.Second, "how often the balancer plans")
	fs.DurationVar(&o.ManualPin, "manual-pin", time.Hour, "how long a manual move, leader, split, merge or slot migration keeps the balancer off its groups (negative: not at all)")
	fs.IntVar(&o.BalancerMaxTasks, "balancer-max-tasks", 2, "tasks (replica moves, slot moves, splits, merges) running at once that the balancer waits for")
	fs.IntVar(&o.GroupsPerNode, "balancer-groups-per-node", 1, "slot groups the balancer keeps per active node once there are more nodes than replicas per group (-1: it never splits or merges)")
	fs.DurationVar(&o.ProjectInterval, "project-interval", 200*time.Millisecond, "how often subscriber changes are projected into memberships (negative: never; for tests)")
	fs.IntVar(&o.WatchRecords, "watch-retention-records", 10000, "changes each hash slot keeps for watchers to resume from (the same on every node)")
	fs.DurationVar(&o.WatchAge, "watch-retention-age", 24*time.Hour, "how long a hash slot keeps a change for watchers to resume from, counted as it is written (the same on every node)")
	fs.IntVar(&o.MaxWatchers, "max-watchers", 10000, "watch streams this node serves at once (429 above)")
	fs.DurationVar(&o.LeaderHoldDown, "leader-hold-down", 30*time.Second, "how long a node that was disrupted (unreachable, restarted, lost its leadership or its leader) must be healthy before leadership is moved to it")
	fs.StringVar(&o.TokensFile, "tokens-file", "", `API tokens, one "role token" line each (roles: read, write, admin); or SLOTMETA_TOKENS="role:token,…"`)
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate (PEM) of mutual TLS between nodes, Raft and peer RPC; with --tls-cert and --tls-key, or none")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "this node's certificate (PEM), signed by --tls-ca, for server and client auth on its Raft and peer hosts")
	fs.StringVar(&o.TLSKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	fs.StringVar(&o.CertsDir, "certs-dir", "", "directory of `slotmeta cert` files: ca.crt, node.crt and node.key (the defaults of --tls-ca, --tls-cert and --tls-key)")
	fs.BoolVar(&o.Insecure, "insecure", false, "allow Raft, peer RPC and the API beyond loopback without TLS (logged and shown loudly; never in production)")
	fs.StringVar(&o.ClusterSecretFile, "cluster-secret-file", "", "file holding the cluster secret (instead of --cluster-secret); re-read on SIGHUP")
	fs.DurationVar(&o.SecretOverlap, "secret-overlap", 10*time.Minute, "after a new cluster secret is loaded, how long the previous one is still accepted")
	fs.BoolVar(&o.CheckConfig, "check-config", false, "validate flags, addresses, certificates, tokens and the data directory, print what would run, and exit (0: fine)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to drain HTTP on SIGINT/SIGTERM")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, `Usage:
  slotmeta [flags]             run a node (flags below; each also read from SLOTMETA_<FLAG>)
  slotmeta cert <command> …    certificates: create-ca, create-node, create-client, list (slotmeta cert -h)
  slotmeta ctl <noun> <verb> … call a cluster's API: kv, user, channel, cluster, node, group, task, … (slotmeta ctl -h)
  slotmeta restore --from DIR … lay this node's data directory out from a backup (slotmeta restore -h)
  slotmeta recover-controller … rebuild a controller that lost its quorum, offline (slotmeta recover-controller -h)
  slotmeta --version           print the version
  slotmeta --check-config …    check a configuration and print what would run

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SLOTMETA_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := getenv(env); v != "" && !set[f.Name] {
			if err := f.Value.Set(v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s=%q: %w", env, v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.CertsDir != "" {
		for _, f := range []struct {
			v    *string
			name string
		}{{&o.TLSCA, "ca.crt"}, {&o.TLSCert, "node.crt"}, {&o.TLSKey, "node.key"}} {
			if *f.v == "" {
				*f.v = filepath.Join(o.CertsDir, f.name)
			}
		}
	}
	return o, nil
}

// secret returns the cluster secret (--cluster-secret, else the first line
// of --cluster-secret-file), or why none may be used. With every address on
// loopback none is needed: "" then, and the cluster uses the secret
// generated at bootstrap (cluster.Config.GenerateSecret) — never one that
// is written in the source, which any local process could send.
func (o *options) secret() (string, error) {
	if o.ClusterSecret != "" && o.ClusterSecretFile != "" {
		return "", fmt.Errorf("--cluster-secret and --cluster-secret-file exclude each other")
	}
	if o.ClusterSecretFile != "" {
		s, _, err := readSecretFile(o.ClusterSecretFile) // at least 16 bytes, as --cluster-secret
		return s, err
	}
	if o.ClusterSecret != "" {
		if len(o.ClusterSecret) < peer.MinSecretBytes {
			return "", fmt.Errorf("--cluster-secret has %d bytes, at least %d are needed", len(o.ClusterSecret), peer.MinSecretBytes)
		}
		return o.ClusterSecret, nil
	}
	for _, a := range []string{o.RaftAddr, o.PeerAddr, o.APIAddr} {
		if !isLoopback(a) {
			return "", fmt.Errorf("--cluster-secret is required when %s is not a loopback address", a)
		}
	}
	return "", nil
}

// members parses --initial-members, or returns this node alone; a joining
// node has none.
func (o *options) members() ([]controller.Node, error) {
	if o.Join != "" {
		if strings.TrimSpace(o.InitialMembers) != "" {
			return nil, fmt.Errorf("--join and --initial-members exclude each other")
		}
		return nil, nil
	}
	if strings.TrimSpace(o.InitialMembers) == "" {
		return []controller.Node{{ID: slotstore.NodeID(o.NodeID), RaftAddr: o.RaftAddr, APIAddr: o.APIAddr, PeerAddr: o.PeerAddr}}, nil
	}
	var out []controller.Node
	for _, item := range strings.Split(o.InitialMembers, ",") {
		id, addrs, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("initial member %q: want id=raft/api/peer", item)
		}
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("initial member %q: bad id", item)
		}
		parts := strings.Split(addrs, "/")
		if len(parts) > 3 {
			return nil, fmt.Errorf("initial member %q: want id=raft/api/peer", item)
		}
		for _, p := range parts {
			if _, _, err := net.SplitHostPort(p); err != nil {
				return nil, fmt.Errorf("initial member %q: %w", item, err)
			}
		}
		m := controller.Node{ID: slotstore.NodeID(n), RaftAddr: parts[0]}
		if len(parts) > 1 {
			m.APIAddr = parts[1]
		}
		if len(parts) > 2 {
			m.PeerAddr = parts[2]
		}
		out = append(out, m)
	}
	return out, nil
}

// isLoopback reports whether a listen address only accepts local connections.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticator builds the credential check from --tokens-file and
// SLOTMETA_TOKENS.
func (o *options) authenticator(getenv func(string) string) (*auth.Authenticator, error) {
	c, err := o.credentials(getenv)
	if err != nil {
		return nil, err
	}
	return auth.FromCredentials(c)
}

// joinToken is the token a joining node registers with: --join-token, else
// the first (sorted) admin token of its own tokens — nodes of one cluster
// usually share the tokens file.
func (o *options) joinToken(getenv func(string) string) (string, error) {
	if o.JoinToken != "" || o.Join == "" {
		return o.JoinToken, nil
	}
	c, err := o.credentials(getenv)
	if err != nil {
		return "", err
	}
	var admins []string
	for _, t := range c.Tokens {
		if t.Role == auth.RoleAdmin {
			admins = append(admins, t.Secret)
		}
	}
	slices.Sort(admins)
	if len(admins) == 0 {
		return "", nil
	}
	return admins[0], nil
}

// credentials reads --tokens-file and SLOTMETA_TOKENS (both count).
func (o *options) credentials(getenv func(string) string) (auth.Credentials, error) {
	var c auth.Credentials
	if o.TokensFile != "" {
		f, err := os.Open(o.TokensFile)
		if err != nil {
			return c, fmt.Errorf("tokens file: %w", err)
		}
		defer f.Close()
		if c, err = auth.Parse(f); err != nil {
			return c, fmt.Errorf("tokens file %s: %w", o.TokensFile, err)
		}
	}
	if env := getenv("SLOTMETA_TOKENS"); env != "" {
		more, err := auth.ParseEnv(env)
		if err != nil {
			return c, fmt.Errorf("SLOTMETA_TOKENS: %w", err)
		}
		c.Tokens = append(c.Tokens, more...)
	}
	return c, nil
}

// readSecretFile reads a cluster secret file: the first line is the secret
// this node sends; further lines (blank and # lines aside) are secrets it
// also accepts — earlier secrets while a rotation runs, so that a node
// restarted in the middle of one still takes its peers' calls.
func readSecretFile(path string) (string, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("cluster secret file: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	current := strings.TrimSpace(lines[0])
	if len(current) < 16 {
		return "", nil, fmt.Errorf("cluster secret file %s: the secret (its first line) is shorter than 16 characters", path)
	}
	var accepted []string
	for i, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if len(l) < 16 {
			return "", nil, fmt.Errorf("cluster secret file %s: line %d: an accepted secret is shorter than 16 characters", path, i+2)
		}
		accepted = append(accepted, l)
	}
	if len(accepted) > peer.MaxAcceptedSecrets {
		return "", nil, fmt.Errorf("cluster secret file %s: %d accepted secrets, at most %d", path, len(accepted), peer.MaxAcceptedSecrets)
	}
	return current, accepted, nil
}
