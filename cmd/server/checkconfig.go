package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// checkConfig is --check-config: every check a start would make before it
// opens anything — flags, addresses, certificates, tokens, the security
// rule, the data directory — and whether the addresses can be bound now.
// It prints what would run and returns nil, or an error listing every
// problem (the process then exits 1). It starts nothing.
func checkConfig(o *options, getenv func(string) string, w io.Writer) error {
	p, err := o.plan(getenv)
	var found []string
	var ps problems
	if errors.As(err, &ps) {
		for _, e := range ps {
			found = append(found, e.Error())
		}
	}
	if err := checkDataDir(o.DataDir); err != nil {
		found = append(found, err.Error())
	}
	if err := checkRestored(o); err != nil {
		found = append(found, err.Error())
	}
	for _, a := range []struct {
		name, addr string
		advertised bool
	}{{"--api-addr", o.APIAddr, false}, {"--raft-addr", o.RaftAddr, true}, {"--peer-addr", o.PeerAddr, true}} {
		if err := checkBind(a.addr, a.advertised); err != nil {
			found = append(found, fmt.Sprintf("%s %s: %v", a.name, a.addr, err))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("--check-config: %d problem(s):\n  - %s", len(found), strings.Join(found, "\n  - "))
	}
	fmt.Fprintf(w, "configuration OK: node %d would run\n", o.NodeID)
	fmt.Fprintf(w, "  data dir   %s\n", describeDataDir(o.DataDir))
	clusterTLS := "plain TCP (loopback only)"
	if p.sec.tls {
		clusterTLS = "mutual TLS"
	} else if o.Insecure {
		clusterTLS = "plain TCP, INSECURE"
	}
	fmt.Fprintf(w, "  raft       %s (%s)\n", o.RaftAddr, clusterTLS)
	fmt.Fprintf(w, "  peer RPC   %s (%s, cluster secret %s)\n", o.PeerAddr, clusterTLS, secretSource(o, p.secret))
	api := p.sec.scheme() + "://" + o.APIAddr
	clientCerts := ""
	if p.apiTLS != nil {
		clientCerts = ", client certificates accepted"
	}
	fmt.Fprintf(w, "  API        %s, console %s/console%s\n", api, api, clientCerts)
	tokens, names := p.authn.Counts()
	if p.authn.Enabled() {
		var named []string
		for _, t := range p.creds.Tokens {
			if t.Name != "" {
				named = append(named, t.Name)
			}
		}
		fmt.Fprintf(w, "  access     %d token(s) (named: %s), %d certificate name(s)\n", tokens, strings.Join(named, ", "), names)
	} else {
		fmt.Fprintf(w, "  access     off (no tokens: the API listens on loopback only)\n")
	}
	if p.apiTLS != nil {
		leaf := p.apiTLS.Leaf()
		fmt.Fprintf(w, "  certificate %s: serial %s, hosts %s, expires %s (in %d days)\n", o.TLSCert, leaf.SerialNumber.Text(16),
			strings.Join(certs.Hosts(leaf), ","), leaf.NotAfter.UTC().Format(time.DateOnly), int(time.Until(leaf.NotAfter).Hours()/24))
	}
	switch {
	case o.Join != "":
		fmt.Fprintf(w, "  cluster    joins through %s\n", o.Join)
	default:
		ids := make([]string, len(p.members))
		for i, m := range p.members {
			ids[i] = fmt.Sprint(m.ID)
		}
		fmt.Fprintf(w, "  cluster    founding members %s (a restart keeps the cluster it has)\n", strings.Join(ids, ","))
	}
	for _, warn := range p.sec.warnings {
		fmt.Fprintf(w, "  INSECURE   %s\n", warn)
	}
	return nil
}

func secretSource(o *options, secret string) string {
	switch {
	case o.ClusterSecretFile != "":
		return "from " + o.ClusterSecretFile + ", reloaded on SIGHUP"
	case secret == "":
		return "generated at bootstrap, kept in the data directory (loopback only)"
	}
	return "from --cluster-secret"
}

// checkDataDir: an existing directory must be writable; a missing one must
// be creatable (its nearest existing parent writable).
func checkDataDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("data dir %s is not a directory", dir)
	case err == nil:
		return writable(dir)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	for {
		if st, err := os.Stat(parent); err == nil && st.IsDir() {
			if err := writable(parent); err != nil {
				return fmt.Errorf("data dir %s cannot be created: %w", dir, err)
			}
			return nil
		}
		next := filepath.Dir(parent)
		if next == parent {
			return fmt.Errorf("data dir %s: no existing parent directory", dir)
		}
		parent = next
	}
}

func writable(dir string) error {
	f, err := os.CreateTemp(dir, ".slotmeta-check-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

func describeDataDir(dir string) string {
	if seed, ok, _ := restore.ReadSeed(dir); ok {
		if _, err := os.Stat(filepath.Join(dir, "raft")); err == nil {
			return fmt.Sprintf("%s (restored from backup %s as cluster %s: it restarts on it)", dir, seed.Controller.BackupID, seed.ClusterID)
		}
		return fmt.Sprintf("%s (laid out from backup %s: the node founds cluster %s)", dir, seed.Controller.BackupID, seed.ClusterID)
	}
	if _, err := os.Stat(filepath.Join(dir, "raft")); err == nil {
		return dir + " (holds this node's data: it restarts on it)"
	}
	return dir + " (new: the node starts empty)"
}

// checkRestored: a data directory laid out by a restore is for the node
// and founding members the restore was given.
func checkRestored(o *options) error {
	seed, ok, err := restore.ReadSeed(o.DataDir)
	if err != nil || !ok {
		return err
	}
	if seed.NodeID != slotstore.NodeID(o.NodeID) {
		return fmt.Errorf("data dir %s was restored for node %d, not %d", o.DataDir, seed.NodeID, o.NodeID)
	}
	members, err := o.members()
	if err != nil {
		return nil // reported by the plan
	}
	return seed.CheckMembers(members)
}

// checkBind reports whether addr can be listened on now; an advertised
// address (other nodes dial it) needs a host.
func checkBind(addr string, advertised bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if port == "" || (advertised && host == "") {
		return fmt.Errorf("want host:port with both parts (a node advertises this address)")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen (not an address of this host, or in use — by this node already running?): %w", err)
	}
	return ln.Close()
}
