package cluster

import (
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/certs"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RotateSecret makes next the cluster secret this node's peer calls carry;
// the current one is still accepted for overlap (peer.Secret).
func (n *Node) RotateSecret(next string, overlap time.Duration) { n.secret.Set(next, overlap) }

// AcceptSecrets makes this node accept secrets (never send them) besides
// the current one and those of running overlaps (peer.Secret.Accept).
func (n *Node) AcceptSecrets(secrets []string) { n.secret.Accept(secrets) }

// SecretOverlapUntil is when the previous cluster secret stops being
// accepted (zero: no rotation in progress).
func (n *Node) SecretOverlapUntil() time.Time { return n.secret.OverlapUntil() }

// ReloadTLS re-reads the node's certificate, key and CA files: the next
// handshakes of peer RPC (both ways) and of the Raft port's server side use
// them (both read the reloaded state at each handshake; established
// connections keep theirs), and dragonboat's dialing side reads the files
// for every new connection anyway. A file that does not load leaves
// everything as it was and is the error. Without TLS it does nothing.
func (n *Node) ReloadTLS() error {
	if err := n.peerTLS.Reload(); err != nil {
		return fmt.Errorf("cluster: reload TLS files: %w", err)
	}
	return nil
}

// TLSFiles is the node's loaded certificate, key and CA pool (nil without
// TLS): the API serves HTTPS from the same load, so one reload changes
// every listener together.
func (n *Node) TLSFiles() *certs.Reloader {
	if n.peerTLS == nil {
		return nil
	}
	return n.peerTLS.Files
}

// Certificate describes the node's certificate as loaded now (nil without
// TLS).
func (n *Node) Certificate() *slotstore.CertificateInfo {
	if n.peerTLS == nil {
		return nil
	}
	leaf := n.peerTLS.Files.Leaf()
	if leaf == nil {
		return nil
	}
	return &slotstore.CertificateInfo{Serial: leaf.SerialNumber.Text(16), Subject: leaf.Subject.CommonName, NotAfterMs: leaf.NotAfter.UnixMilli(),
		Hosts: certs.Hosts(leaf)}
}

// CurrentSecret is the cluster secret this node's calls carry now.
func (n *Node) CurrentSecret() string { return n.secret.Current() }
