package main

import (
	"crypto/x509"
	"fmt"
	"net"
	"strings"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/balance"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/watch"
)

// plan is everything the flags decide before anything listens: who may
// call, how the listeners are protected, the cluster configuration. Both a
// start and --check-config build it; --check-config only prints it.
type plan struct {
	authn     *auth.Authenticator
	creds     auth.Credentials
	sec       security
	members   []controller.Node
	secret    string
	joinToken string
	apiTLS    *certs.Reloader // nil: plain HTTP
	cluster   cluster.Config  // without Logger and Registerer
}

// plan checks the options and builds the plan; the error (problems) lists
// every problem found (each check that does not depend on a failed one
// runs).
func (o *options) plan(getenv func(string) string) (*plan, error) {
	p := &plan{}
	var errs []error
	var err error
	if p.creds, err = o.credentials(getenv); err != nil {
		errs = append(errs, err)
	} else if p.authn, err = auth.FromCredentials(p.creds); err != nil {
		errs = append(errs, err)
	}
	if p.joinToken, err = o.joinToken(getenv); err != nil && p.authn != nil {
		errs = append(errs, err)
	}
	if p.authn != nil {
		var unsafe []error
		p.sec, unsafe = o.checkSecurity(p.authn)
		errs = append(errs, unsafe...)
	}
	if p.members, err = o.members(); err != nil {
		errs = append(errs, err)
	}
	if p.secret, err = o.secret(); err != nil {
		errs = append(errs, err)
	}
	var accepted []string
	if o.ClusterSecretFile != "" {
		_, accepted, _ = readSecretFile(o.ClusterSecretFile) // its error is o.secret's
	}
	if loaded, err := o.tlsConfig().Load(); err != nil {
		errs = append(errs, err)
	} else if loaded != nil {
		p.apiTLS = loaded.Files
		errs = append(errs, o.certificateNamesHosts(p.apiTLS.Leaf())...)
	}
	if o.SecretOverlap < 0 {
		errs = append(errs, fmt.Errorf("--secret-overlap %v is negative", o.SecretOverlap))
	}
	p.cluster = cluster.Config{
		NodeID:               slotstore.NodeID(o.NodeID),
		DataDir:              o.DataDir,
		BackupDir:            o.BackupDir,
		RaftAddr:             o.RaftAddr,
		APIAddr:              o.APIAddr,
		PeerAddr:             o.PeerAddr,
		InitialMembers:       p.members,
		JoinAddr:             o.Join,
		JoinToken:            p.joinToken,
		ClusterSecret:        p.secret,
		GenerateSecret:       p.secret == "",
		AcceptedSecrets:      accepted,
		TLS:                  o.tlsConfig(),
		DisableHashSlotMoves: !o.EnableSlotMigration,
		DisableBalancer:      !o.Balancer,
		DisableQuiesce:       !o.Quiesce,
		DisableLeaseReads:    !o.LeaseReads,
		BalanceInterval:      o.BalanceInterval,
		ManualPin:            o.ManualPin,
		Balancer:             balance.Config{MaxTasks: o.BalancerMaxTasks, GroupsPerNode: o.GroupsPerNode},
		ProjectInterval:      o.ProjectInterval,
		WatchRecords:         o.WatchRecords,
		WatchAge:             o.WatchAge,
		Watch:                watch.Config{MaxSubscribers: o.MaxWatchers},
		Leadership:           policy.Leadership{HoldDown: o.LeaderHoldDown},
		ClusterID:            o.ClusterID,
		GroupCount:           o.Groups,
		ReplicationFactor:    o.ReplicationFactor,
		RTT:                  o.RTT,
		ElectionRTT:          o.ElectionRTT,
		HeartbeatRTT:         o.HeartbeatRTT,
		RaftWorkers:          o.RaftWorkers,
		ApplyWorkers:         o.ApplyWorkers,
		CheckEvery:           o.CheckEvery,
		CheckBytesPerSecond:  o.CheckPace,
		DiskReserve:          o.DiskReserve,
	}
	if len(errs) == 0 {
		c := p.cluster
		c.EnsureDefaults()
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return p, problems(errs)
	}
	return p, nil
}

// certificateNamesHosts checks that the node's certificate names the hosts
// of its addresses: other nodes verify it for the Raft and peer hosts they
// dial, clients for the API's (a wildcard listen address aside).
func (o *options) certificateNamesHosts(leaf *x509.Certificate) []error {
	var errs []error
	for _, a := range []struct{ flag, addr string }{{"--raft-addr", o.RaftAddr}, {"--peer-addr", o.PeerAddr}, {"--api-addr", o.APIAddr}} {
		host, _, err := net.SplitHostPort(a.addr)
		if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
			continue
		}
		if err := leaf.VerifyHostname(host); err != nil {
			errs = append(errs, fmt.Errorf("the certificate %s names %s, not the host of %s %s: other nodes and clients would refuse it; "+
				"create it with `slotmeta cert create-node --host %s`", o.TLSCert, strings.Join(certs.Hosts(leaf), ","), a.flag, a.addr, host))
		}
	}
	return errs
}
