package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
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

// secretKeeper owns a node's cluster secret: the given one, or the
// generated one it adopts from the controller state and keeps on disk.
//
// Concurrency contract: adopt runs on the controller's apply path (one at a
// time); the rest may be called from any goroutine.
type secretKeeper struct {
	secret   *peer.Secret
	generate bool
	path     string // the generated secret's file
	log      *slog.Logger
	kept     atomic.Pointer[string] // the generated secret adopted (or found on disk)
}

// newSecretKeeper starts with the secret given, else the generated one kept
// from an earlier run, else a random one of the node's own.
func newSecretKeeper(cfg Config) (*secretKeeper, error) {
	k := &secretKeeper{generate: cfg.GenerateSecret, path: filepath.Join(cfg.DataDir, peerSecretFile), log: cfg.Logger}
	if !k.generate {
		k.secret = peer.NewSecret(cfg.ClusterSecret)
		return k, nil
	}
	b, err := os.ReadFile(k.path)
	switch s := strings.TrimSpace(string(b)); {
	case err == nil && len(s) >= controller.MinPeerSecretBytes:
		k.secret = peer.NewSecret(s)
		k.kept.Store(&s)
	case err == nil:
		return nil, fmt.Errorf("cluster: %s holds no usable secret; remove it to use the controller's", k.path)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cluster: read the generated secret: %w", err)
	default:
		k.secret = peer.NewSecret(newSecret())
	}
	return k, nil
}

// newSecret is 32 random bytes, hex-encoded.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// adopt makes the controller state's generated secret the node's (on every
// controller apply: a comparison unless it changed).
func (k *secretKeeper) adopt(st *controller.State) {
	if !k.generate || st.PeerSecret == "" {
		return
	}
	if kept := k.kept.Load(); kept != nil && *kept == st.PeerSecret {
		return
	}
	// The secret the node had was its own: nobody else takes it, so no
	// overlap. (The founding node whose bootstrap won has it already.)
	k.secret.Set(st.PeerSecret, 0)
	s := st.PeerSecret
	k.kept.Store(&s) // tried once per secret: a failure is logged, not retried at every apply
	if err := writeSecretFile(k.path, s); err != nil {
		k.log.Error("could not keep the generated cluster secret; a restart waits for the controller's", "err", err)
		return
	}
	k.log.Info("peer RPC uses the cluster secret generated at bootstrap", "file", k.path)
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

// bootSecret is what a bootstrap carries: the node's own secret when it
// generates one ("" when the operator gave every node one).
func (k *secretKeeper) bootSecret() string {
	if !k.generate {
		return ""
	}
	return k.secret.Current()
}

// missing reports whether the cluster needs a generated secret it does not
// have (bootstrapped before secrets were generated).
func (k *secretKeeper) missing(st *controller.State) bool {
	return k.generate && st.Bootstrapped && st.PeerSecret == ""
}

// ensurePeerSecret gives a cluster bootstrapped before secrets were
// generated one (the controller leader proposes its own; the first stays).
func (f follower) ensurePeerSecret(ctx context.Context, st *controller.State) {
	if !f.n.secrets.missing(st) || f.n.ControllerLeader() != f.n.cfg.NodeID {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, f.n.cfg.RequestTimeout)
	defer cancel()
	if err := f.n.ctl.proposeController(cctx, controller.Command{PeerSecret: &controller.SetPeerSecret{Secret: f.n.secret.Current()}}); err != nil {
		f.n.cfg.Logger.Warn("could not give the cluster a generated secret yet", "err", err)
	}
}

// SecretSource says where the node's cluster secret comes from: "given"
// (flag or file) or "generated" (at bootstrap, kept in the data directory).
func (n *Node) SecretSource() string {
	if n.secrets.generate {
		return "generated"
	}
	return "given"
}
