package certs

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PEM block types of the files this package writes and reads.
const (
	pemCertificate = "CERTIFICATE"
	pemPKCS8Key    = "PRIVATE KEY"
	pemECKey       = "EC PRIVATE KEY" // SEC 1, as openssl writes EC keys
	pemRSAKey      = "RSA PRIVATE KEY"
)

// readCertificates parses every CERTIFICATE block of the PEM file at path,
// in file order. Other blocks are skipped: a bundle may carry comments or a
// key. A file without any certificate is an error, so that an empty or
// mistaken file is not taken for "trust nothing".
func readCertificates(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: reading certificates: %w", err)
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != pemCertificate {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: %s: certificate %d: %w", path, len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("certs: %s holds no PEM %s block", path, pemCertificate)
	}
	return certs, nil
}

// readSigner reads a private key: PKCS#8 as this package writes it, or the
// SEC 1 and PKCS#1 forms of openssl, so that a CA made elsewhere can sign.
func readSigner(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: reading key: %w", err)
	}
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, fmt.Errorf("certs: %s holds no PEM private key", path)
		}
		var key any
		switch b.Type {
		case pemPKCS8Key:
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case pemECKey:
			key, err = x509.ParseECPrivateKey(b.Bytes)
		case pemRSAKey:
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("certs: %s: %w", path, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("certs: %s: a %T cannot sign", path, key)
		}
		return s, nil
	}
}

// encodeKey is key as PKCS#8 PEM.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPKCS8Key, Bytes: der}), nil
}

// encodeCert is one DER certificate as PEM.
func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

// prepare creates dir (0700: it holds keys) and, unless overwrite, refuses
// when any of paths exists. It runs before any key is generated, so a
// refusal leaves nothing half-written.
func prepare(dir string, overwrite bool, paths ...string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certs: creating the certificates directory: %w", err)
	}
	if overwrite {
		return nil
	}
	for _, p := range paths {
		_, err := os.Lstat(p)
		if err == nil {
			return fmt.Errorf("certs: %s: %w; refusing to overwrite it (Overwrite, --overwrite)", p, fs.ErrExist)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("certs: %w", err)
		}
	}
	return nil
}

// writeFile writes data to path with mode perm through a temporary file in
// the same directory and a rename, so that a concurrent reader (a Reloader)
// never sees a part of the file, and a key is never readable by others —
// not even for the moment between creating and chmod-ing it, because
// CreateTemp makes the file 0600.
func writeFile(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	// Sync before the rename: after a crash the name must not point at an
	// empty file where a key was.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("certs: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}
