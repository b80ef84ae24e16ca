package main

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/auth"
	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// reloader re-reads, on SIGHUP, what may change while the node runs: the
// tokens file (swapped at once; a file that does not parse, or that would
// turn access control off, changes nothing), the cluster secret file (the
// new secret is sent at once and the previous one still accepted for
// --secret-overlap, its further lines accepted too; peer.Secret) and the
// certificates (one load that the next handshakes of the API, peer RPC and
// the Raft port all read; no listener restarts, no connection drops). Each
// part that fails keeps its previous state; the others still reload. The
// outcome is logged and shown by GET /v1/cluster/security.
//
// Concurrency contract: reload runs on the signal goroutine only; status
// may be called from any goroutine.
type reloader struct {
	o      *options
	getenv func(string) string
	log    *slog.Logger
	authn  *auth.Authenticator
	node   *cluster.Node
	apiTLS *certs.Reloader
	sec    security

	mu       sync.Mutex
	loadedAt time.Time
	lastErr  error
}

func (r *reloader) reload() error {
	var errs []error
	if next, err := r.o.authenticator(r.getenv); err != nil {
		errs = append(errs, fmt.Errorf("tokens: %w", err))
	} else if r.authn.Enabled() && !next.Enabled() {
		errs = append(errs, errors.New("tokens: the new tokens file has no credentials; refusing to turn access control off while running"))
	} else {
		r.authn.Swap(next)
		tokens, names := next.Counts()
		r.log.Info("reloaded API credentials", "tokens", tokens, "certificate_names", names)
	}
	if r.o.ClusterSecretFile != "" {
		if s, accepted, err := readSecretFile(r.o.ClusterSecretFile); err != nil {
			errs = append(errs, err)
		} else {
			if s != r.node.CurrentSecret() {
				r.node.RotateSecret(s, r.o.SecretOverlap)
				r.log.Info("new cluster secret in use; the previous one is accepted until the overlap ends", "overlap", r.o.SecretOverlap)
			}
			r.node.AcceptSecrets(accepted)
		}
	}
	if r.apiTLS != nil {
		before := r.apiTLS.Leaf().SerialNumber.Text(16)
		if err := r.node.ReloadTLS(); err != nil { // the API's load too (TLSFiles)
			errs = append(errs, err)
		} else if leaf := r.apiTLS.Leaf(); leaf.SerialNumber.Text(16) != before {
			r.log.Info("new node certificate in use", "serial", leaf.SerialNumber.Text(16), "previous", before, "not_after", leaf.NotAfter)
		}
	}
	err := errors.Join(errs...)
	r.mu.Lock()
	if err == nil {
		r.loadedAt = time.Now()
	}
	r.lastErr = err
	r.mu.Unlock()
	return err
}

// status is how the node is secured now.
func (r *reloader) status() slotstore.SecurityStatus {
	r.mu.Lock()
	at, lastErr := r.loadedAt, r.lastErr
	r.mu.Unlock()
	st := slotstore.SecurityStatus{Insecure: r.o.Insecure, Warnings: append([]string{}, r.sec.warnings...),
		APITLS: r.apiTLS != nil, ClientCerts: r.apiTLS != nil, ClusterTLS: r.sec.tls, ReloadedAtMs: at.UnixMilli(),
		Certificate: r.node.Certificate(), ClusterSecret: r.node.SecretSource()}
	st.Tokens, st.CertNames = r.authn.Counts()
	if r.apiTLS != nil {
		if w := expiryWarning(r.apiTLS.Leaf().NotAfter, time.Now()); w != "" {
			st.Warnings = append(st.Warnings, w)
		}
	}
	if lastErr != nil {
		st.ReloadError = lastErr.Error()
	}
	if t := r.node.SecretOverlapUntil(); !t.IsZero() {
		st.SecretOverlapUntilMs = t.UnixMilli()
	}
	return st
}

// certificateWarnDays is how long before its end a node certificate is
// shown as expiring.
const certificateWarnDays = 30

// expiryWarning says so when the node certificate ends within
// certificateWarnDays of now ("" otherwise).
func expiryWarning(notAfter, now time.Time) string {
	left := notAfter.Sub(now)
	switch {
	case left <= 0:
		return fmt.Sprintf("the node certificate expired on %s: re-issue it (slotmeta cert create-node --overwrite) and send SIGHUP", notAfter.UTC().Format(time.DateOnly))
	case left < certificateWarnDays*24*time.Hour:
		return fmt.Sprintf("the node certificate expires on %s, in %d days: re-issue it (slotmeta cert create-node --overwrite) and send SIGHUP",
			notAfter.UTC().Format(time.DateOnly), int(left.Hours()/24))
	}
	return ""
}
