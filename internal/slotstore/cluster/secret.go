package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"slotmeta/internal/slotstore/controller"
)

// A node given no cluster secret (Config.GenerateSecret: every address on
// loopback) authenticates peer RPC with the secret generated at bootstrap
// (controller/secret.go). Until its controller replica has applied that
// secret, the node calls and accepts only a random one of its own — which
// is also what it proposes with its bootstrap, so the founding node whose
// bootstrap wins never changes secret. Once applied, the secret is kept in
// the data directory, so that a restarted node talks to its peers before its
// controller replica has caught up.

// peerSecretFile is the generated secret's file in the data directory.
const peerSecretFile = "peer-secret"

// initialSecret is the secret a node starts with: the one given, else the
// generated one kept from an earlier run, else a random one of its own.
func initialSecret(cfg Config) (secret string, kept bool, err error) {
	if !cfg.GenerateSecret {
		return cfg.ClusterSecret, false, nil
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, peerSecretFile))
	switch {
	case err == nil && len(strings.TrimSpace(string(b))) >= controller.MinPeerSecretBytes:
		return strings.TrimSpace(string(b)), true, nil
	case err == nil:
		return "", false, fmt.Errorf("cluster: %s holds no usable secret; remove it to use the controller's", filepath.Join(cfg.DataDir, peerSecretFile))
	case !errors.Is(err, os.ErrNotExist):
		return "", false, fmt.Errorf("cluster: read the generated secret: %w", err)
	}
	return newSecret(), false, nil
}

// newSecret is 32 random bytes, hex-encoded.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// adoptSecret makes the controller state's generated secret this node's
// (on every controller apply: a comparison unless it changed).
func (n *Node) adoptSecret(st *controller.State) {
	if !n.cfg.GenerateSecret || st.PeerSecret == "" || st.PeerSecret == n.keptSecret.Load() {
		return
	}
	// The secret this node had was its own: nobody else takes it, so no
	// overlap. (The founding node whose bootstrap won has it already.)
	n.secret.Set(st.PeerSecret, 0)
	n.keptSecret.Store(st.PeerSecret) // tried once per secret: a failure is logged, not retried at every apply
	if err := writeSecretFile(filepath.Join(n.cfg.DataDir, peerSecretFile), st.PeerSecret); err != nil {
		n.cfg.Logger.Error("could not keep the generated cluster secret; a restart waits for the controller's", "err", err)
		return
	}
	n.cfg.Logger.Info("peer RPC uses the cluster secret generated at bootstrap", "file", filepath.Join(n.cfg.DataDir, peerSecretFile))
}

// writeSecretFile writes secret to path, mode 0600, through a rename.
func writeSecretFile(path, secret string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(secret+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // an older file's mode stays otherwise
		return err
	}
	return os.Rename(tmp, path)
}

// ensurePeerSecret gives a cluster bootstrapped before secrets were
// generated one (the controller leader proposes its own; the first stays).
func (n *Node) ensurePeerSecret(ctx context.Context, st *controller.State) {
	if !n.cfg.GenerateSecret || st.PeerSecret != "" || n.ControllerLeader() != n.cfg.NodeID {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
	defer cancel()
	if err := n.proposeController(cctx, controller.Command{PeerSecret: &controller.SetPeerSecret{Secret: n.secret.Current()}}); err != nil {
		n.cfg.Logger.Warn("could not give the cluster a generated secret yet", "err", err)
	}
}

// SecretSource says where the node's cluster secret comes from: "given"
// (flag or file) or "generated" (at bootstrap, kept in the data directory).
func (n *Node) SecretSource() string {
	if n.cfg.GenerateSecret {
		return "generated"
	}
	return "given"
}

// bootSecret is what this node's bootstrap carries: its own secret when it
// generates one ("" when the operator gave every node one).
func (n *Node) bootSecret() string {
	if !n.cfg.GenerateSecret {
		return ""
	}
	return n.secret.Current()
}

// atomicString is a string read and written atomically ("" at first).
type atomicString struct{ p atomic.Pointer[string] }

func (a *atomicString) Load() string {
	if s := a.p.Load(); s != nil {
		return *s
	}
	return ""
}

func (a *atomicString) Store(s string) { a.p.Store(&s) }
