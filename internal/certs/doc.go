// Package certs is the certificate tooling of slotmeta: the `slotmeta cert`
// subcommands (Run), which create a CA and the node and client certificates
// it signs, in the manner of `cockroach cert`; and the Reloader, which loads
// those files for TLS servers and clients and swaps new ones in while the
// process runs.
//
// # Model
//
// Each node has a certificates directory (./certs unless --certs-dir says
// otherwise) holding
//
//	ca.crt                 the CA certificate(s) the node trusts
//	ca.key                 the CA's private key; better kept off the nodes
//	                       (create-node and create-client take --ca-key)
//	node.crt, node.key     the node's certificate, for server AND client
//	                       authentication: one certificate serves Raft, peer
//	                       RPC and the HTTPS API, and is the one the node
//	                       presents when it dials other nodes. Its subject
//	                       alternative names are the hosts and IP addresses
//	                       the node is reached by.
//	client.NAME.crt/.key   a user's certificate, client authentication only,
//	                       common name NAME
//
// Keys are ECDSA P-256, stored as PKCS#8 PEM with mode 0600. Every file is
// written to a temporary file in its directory and renamed into place, so a
// reader (a Reloader) sees the old file or the new one, never a part of one.
// Nothing is written over an existing file unless asked (Overwrite,
// --overwrite).
//
// # Loading
//
// A Reloader loads Files (CA, certificate, key): NodeFiles for a node,
// ClientFiles for a client. ServerConfig serves with the certificate;
// ClientConfig and ClientConfigFor dial with it and verify the server
// themselves against the current CAs (see ClientConfig for why
// InsecureSkipVerify is set there). ClientConfig verifies the server name
// the dialer put into SNI, which never holds an IP address: a peer dialed
// by IP needs ClientConfigFor(ip).
//
// # Rotation
//
// A CA file may hold several CA certificates, and a Reloader trusts every
// one of them: that is how the CA is rotated without a moment in which two
// nodes distrust each other. Create the new CA in another directory, append
// its ca.crt to every node's and client's ca.crt and Reload everywhere, so
// that both CAs are trusted; then re-create the node and client
// certificates from the new CA (--ca-key with the new key: the certificate
// of the key is found in the bundle) and Reload again; finally drop the old
// CA from the bundles. A node certificate alone (new hosts, near expiry) is
// rotated by re-creating it with --overwrite and calling Reload.
//
// # Concurrency
//
// A Reloader is safe for concurrent use. Its state — the certificate and the
// pool of CAs — is immutable once loaded and published through an atomic
// pointer: handshakes read it without locking, and Reload, which is
// serialized, either replaces it whole or, on any error, leaves it as it
// was. The configs of ServerConfig and ClientConfig read the current state
// at every handshake, so a Reload takes effect for new connections without
// rebuilding any config; established connections keep what they
// negotiated. Each call returns a new *tls.Config that the caller may adjust
// (NextProtos, say) before first use, and must not change afterwards, as
// crypto/tls requires.
//
// The Create functions, List and Run keep no state between calls. Two of
// them writing the same file at once leave one of the two whole files; they
// do not coordinate otherwise, so between the key and the certificate of a
// pair being replaced a Reload may see a key that does not match the
// certificate — it then fails and keeps the previous state, and the next
// Reload picks up the complete pair.
package certs
