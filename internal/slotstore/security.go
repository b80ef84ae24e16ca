package slotstore

// SecurityStatus is how a node is secured right now (GET
// /v1/cluster/security and the console's banner): what is encrypted and
// authenticated, what was reloaded when, and, loudly, what is not
// protected.
type SecurityStatus struct {
	// Insecure is true when the node runs with --insecure: plaintext or
	// unauthenticated listeners beyond loopback were allowed. Warnings
	// name each one.
	Insecure bool     `json:"insecure"`
	Warnings []string `json:"warnings"`
	// APITLS: the API and console are served over HTTPS; ClientCerts:
	// client certificates are accepted as API credentials.
	APITLS      bool `json:"api_tls"`
	ClientCerts bool `json:"client_certificates"`
	// ClusterTLS: Raft and peer RPC run mutual TLS.
	ClusterTLS bool `json:"cluster_tls"`
	// ClusterSecret is where peer RPC's secret comes from: "given"
	// (--cluster-secret or its file) or "generated" (at bootstrap, on
	// loopback; kept in the data directory).
	ClusterSecret string `json:"cluster_secret,omitempty"`
	// Tokens and CertNames count the API credentials configured.
	Tokens    int `json:"tokens"`
	CertNames int `json:"certificate_names"`
	// Certificate is the node's certificate as loaded now.
	Certificate *CertificateInfo `json:"certificate,omitempty"`
	// ReloadedAtMs is when credentials were last loaded in full (at start or
	// by a reload that succeeded); ReloadError
	// why the last reload failed (the previous credentials stay).
	ReloadedAtMs int64  `json:"reloaded_at_ms"`
	ReloadError  string `json:"reload_error,omitempty"`
	// SecretOverlapUntilMs: until then the previous cluster secret is still
	// accepted (0: no overlap running).
	SecretOverlapUntilMs int64 `json:"secret_overlap_until_ms,omitempty"`
	// AuditLost counts audit records this node could not write.
	AuditLost uint64 `json:"audit_lost"`
}

// CertificateInfo describes a loaded certificate.
type CertificateInfo struct {
	Serial     string   `json:"serial"`
	Subject    string   `json:"subject"`
	Hosts      []string `json:"hosts"`
	NotAfterMs int64    `json:"not_after_ms"`
}
