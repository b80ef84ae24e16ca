package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"time"
)

// The file names in a certificates directory.
const (
	CACertFile   = "ca.crt"
	CAKeyFile    = "ca.key"
	NodeCertFile = "node.crt"
	NodeKeyFile  = "node.key"
)

// Default lifetimes, counted in 365-day years. A CA outlives the
// certificates it signs, so that they can be re-issued from it several
// times before it must be rotated.
const (
	DefaultCALifetime     = 10 * 365 * 24 * time.Hour
	DefaultNodeLifetime   = 5 * 365 * 24 * time.Hour
	DefaultClientLifetime = 2 * 365 * 24 * time.Hour
)

// DefaultCACommonName is the CA's common name unless CAOptions says another.
const DefaultCACommonName = "slotmeta CA"

// backdate is how far before "now" a certificate becomes valid: the machine
// that creates it and the nodes that check it need not agree on the time.
const backdate = time.Hour

// CAOptions are the options of CreateCA. The zero value is the defaults.
type CAOptions struct {
	Lifetime   time.Duration    // 0: DefaultCALifetime
	CommonName string           // "": DefaultCACommonName
	Overwrite  bool             // replace existing ca.crt and ca.key
	Now        func() time.Time // nil: time.Now
}

// CertOptions are the options of CreateNode and CreateClient. The zero
// value is the defaults.
type CertOptions struct {
	Lifetime  time.Duration    // 0: DefaultNodeLifetime or DefaultClientLifetime
	CACert    string           // "": dir/ca.crt; may be a bundle of several CAs
	CAKey     string           // "": dir/ca.key
	Overwrite bool             // replace existing certificate and key files
	Now       func() time.Time // nil: time.Now
}

// NodeFiles names the node's files in a certificates directory.
func NodeFiles(dir string) Files {
	return Files{CA: filepath.Join(dir, CACertFile), Cert: filepath.Join(dir, NodeCertFile), Key: filepath.Join(dir, NodeKeyFile)}
}

// ClientFiles names the files of client name in a certificates directory.
func ClientFiles(dir, name string) Files {
	return Files{
		CA:   filepath.Join(dir, CACertFile),
		Cert: filepath.Join(dir, "client."+name+".crt"),
		Key:  filepath.Join(dir, "client."+name+".key"),
	}
}

// CreateCA creates a self-signed CA in dir: ca.crt and ca.key (0600). dir is
// created (0700) if missing.
func CreateCA(dir string, opts CAOptions) error {
	now, lifetime, err := validity(opts.Now, opts.Lifetime, DefaultCALifetime)
	if err != nil {
		return err
	}
	cn := strings.TrimSpace(opts.CommonName)
	if cn == "" {
		cn = DefaultCACommonName
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	if err := prepare(dir, opts.Overwrite, certPath, keyPath); err != nil {
		return err
	}
	serial, err := newSerial()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: generating the CA key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return fmt.Errorf("certs: creating the CA certificate: %w", err)
	}
	return writePair(certPath, der, keyPath, key)
}

// CreateNode creates the node's certificate, signed by the CA, in dir:
// node.crt and node.key (0600). It is for server and client authentication,
// since a node both serves and dials its peers; hosts are the DNS names and
// IP addresses it is reached by, without ports, at least one.
func CreateNode(dir string, hosts []string, opts CertOptions) error {
	ips, names, err := parseHosts(hosts)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "node"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    names,
		IPAddresses: ips,
	}
	f := NodeFiles(dir)
	return issue(dir, f.Cert, f.Key, tmpl, opts, DefaultNodeLifetime)
}

// CreateClient creates the certificate of client name, signed by the CA, in
// dir: client.NAME.crt and client.NAME.key (0600), for client
// authentication only, with common name name. name becomes part of file
// names, hence its narrow alphabet.
func CreateClient(dir, name string, opts CertOptions) error {
	if !validClientName(name) {
		return fmt.Errorf("certs: client name %q: want 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	f := ClientFiles(dir, name)
	return issue(dir, f.Cert, f.Key, tmpl, opts, DefaultClientLifetime)
}

// issue signs tmpl with the CA of opts and writes the certificate and a new
// key. The CA is loaded first, so that a missing CA creates nothing.
func issue(dir, certPath, keyPath string, tmpl *x509.Certificate, opts CertOptions, defaultLifetime time.Duration) error {
	now, lifetime, err := validity(opts.Now, opts.Lifetime, defaultLifetime)
	if err != nil {
		return err
	}
	caCertPath, caKeyPath := opts.CACert, opts.CAKey
	if caCertPath == "" {
		caCertPath = filepath.Join(dir, CACertFile)
	}
	if caKeyPath == "" {
		caKeyPath = filepath.Join(dir, CAKeyFile)
	}
	ca, caKey, err := loadCA(caCertPath, caKeyPath)
	if err != nil {
		return err
	}
	// A certificate signed by a CA outside its validity would never verify.
	if now.Before(ca.NotBefore) || !now.Before(ca.NotAfter) {
		return fmt.Errorf("certs: the CA certificate in %s is valid from %s to %s, not now (%s)",
			caCertPath, ca.NotBefore.UTC().Format(time.RFC3339), ca.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if err := prepare(dir, opts.Overwrite, certPath, keyPath); err != nil {
		return err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return err
	}
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(lifetime)
	// Nor would it verify past the CA's expiry: end with the CA instead.
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: generating a key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return fmt.Errorf("certs: signing the certificate: %w", err)
	}
	return writePair(certPath, der, keyPath, key)
}

// loadCA reads the CA key and, from the CA file, the certificate of that
// key. The file may be a bundle of several CAs (during a rotation); the key
// picks its own certificate from it.
func loadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	key, err := readSigner(keyPath)
	if err != nil {
		return nil, nil, err
	}
	certs, err := readCertificates(certPath)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return nil, nil, fmt.Errorf("certs: %s: unsupported key type %T", keyPath, key.Public())
	}
	for _, c := range certs {
		if !pub.Equal(c.PublicKey) {
			continue
		}
		if !c.IsCA || !c.BasicConstraintsValid || (c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0) {
			return nil, nil, fmt.Errorf("certs: the certificate of %s in %s is not a CA certificate", keyPath, certPath)
		}
		return c, key, nil
	}
	return nil, nil, fmt.Errorf("certs: %s holds no certificate of the key %s", certPath, keyPath)
}

// writePair writes the key first and then the certificate: whichever order,
// a reader between the two sees a mismatched pair, which a Reloader refuses.
func writePair(certPath string, der []byte, keyPath string, key crypto.Signer) error {
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(certPath, encodeCert(der), 0o644)
}

// validity is the creation time and the lifetime, with defaults applied.
func validity(nowFunc func() time.Time, lifetime, defaultLifetime time.Duration) (time.Time, time.Duration, error) {
	if lifetime < 0 {
		return time.Time{}, 0, fmt.Errorf("certs: negative lifetime %s", lifetime)
	}
	if lifetime == 0 {
		lifetime = defaultLifetime
	}
	if nowFunc == nil {
		nowFunc = time.Now
	}
	return nowFunc(), lifetime, nil
}

// newSerial is a random positive 128-bit serial number: unique without any
// record of the serials already issued (RFC 5280 asks for up to 20 octets
// and at least 64 random bits).
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		s, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("certs: generating a serial number: %w", err)
		}
		if s.Sign() > 0 {
			return s, nil
		}
	}
}
