package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Keystore types, as ZooKeeper names them in ssl.keyStore.type.
const (
	TypePKCS12 = "PKCS12"
	TypeJKS    = "JKS"
	TypePEM    = "PEM"
)

// maxStoreSize bounds how much of a keystore file is read.
const maxStoreSize = 16 << 20

// ErrStore marks every failure to read or decode a keystore or truststore.
var ErrStore = errors.New("tlsconf: keystore")

// Store names one keystore or truststore file.
type Store struct {
	Path     string
	Password string
	// PasswordPath is a file holding the password; when set it wins over
	// Password, and one trailing newline is dropped (ZooKeeper's
	// ssl.*.passwordPath).
	PasswordPath string
	// Type is PKCS12, JKS or PEM in any case, or "" to infer it from the
	// file name: .p12 and .pfx are PKCS12, .jks is JKS, .pem is PEM.
	Type string
}

// StoreType returns the keystore type of s: its Type, or the type its
// file extension implies.
func StoreType(s Store) (string, error) {
	if s.Type != "" {
		switch t := strings.ToUpper(s.Type); t {
		case TypePKCS12, TypeJKS, TypePEM:
			return t, nil
		}
		return "", fmt.Errorf("%w: %s: unsupported type %q (PKCS12, JKS or PEM)", ErrStore, s.Path, s.Type)
	}
	switch strings.ToLower(filepath.Ext(s.Path)) {
	case ".p12", ".pfx":
		return TypePKCS12, nil
	case ".jks":
		return TypeJKS, nil
	case ".pem":
		return TypePEM, nil
	}
	return "", fmt.Errorf("%w: %s: cannot infer the type from the file name (.p12, .pfx, .jks or .pem); set its .type", ErrStore, s.Path)
}

// password returns the store's password, reading PasswordPath if set.
func (s Store) password() (string, error) {
	if s.PasswordPath == "" {
		return s.Password, nil
	}
	data, err := os.ReadFile(s.PasswordPath)
	if err != nil {
		return "", fmt.Errorf("%w: password file: %w", ErrStore, err)
	}
	pw := strings.TrimSuffix(string(data), "\n")
	return strings.TrimSuffix(pw, "\r"), nil
}

// read returns the store's bytes, type and password.
func (s Store) read() ([]byte, string, string, error) {
	typ, err := StoreType(s)
	if err != nil {
		return nil, "", "", err
	}
	pw, err := s.password()
	if err != nil {
		return nil, "", "", err
	}
	info, err := os.Stat(s.Path)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrStore, err)
	}
	if info.Size() > maxStoreSize {
		return nil, "", "", fmt.Errorf("%w: %s: larger than %d bytes", ErrStore, s.Path, maxStoreSize)
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %w", ErrStore, err)
	}
	return data, typ, pw, nil
}

// LoadKeyStore reads a keystore: the server's private key and its
// certificate chain (the first private-key entry of a JKS file).
func LoadKeyStore(s Store) (tls.Certificate, error) {
	data, typ, pw, err := s.read()
	if err != nil {
		return tls.Certificate{}, err
	}
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	switch typ {
	case TypePKCS12:
		key, chain, err = decodePKCS12Key(data, pw)
	case TypeJKS:
		key, chain, err = decodeJKSKey(data, pw)
	default:
		key, chain, err = decodePEMKey(data)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s (%s): %w", ErrStore, s.Path, typ, err)
	}
	return certificate(key, chain)
}

// certificate builds a tls.Certificate, checking that the key matches.
func certificate(key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	if key == nil || len(chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("%w: no private key with a certificate", ErrStore)
	}
	pub, ok := key.(interface{ Public() crypto.PublicKey })
	if !ok {
		return tls.Certificate{}, fmt.Errorf("%w: unsupported private key type %T", ErrStore, key)
	}
	leafKey, ok := chain[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !leafKey.Equal(pub.Public()) {
		return tls.Certificate{}, fmt.Errorf("%w: the private key does not match the certificate", ErrStore)
	}
	c := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, cert := range chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// LoadTrustStore reads a truststore: the certificates client chains must
// lead to (every certificate of the file).
func LoadTrustStore(s Store) (*x509.CertPool, error) {
	data, typ, pw, err := s.read()
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch typ {
	case TypePKCS12:
		certs, err = decodePKCS12Trust(data, pw)
	case TypeJKS:
		certs, err = decodeJKSTrust(data, pw)
	default:
		certs, err = decodePEMCerts(data)
	}
	if err == nil && len(certs) == 0 {
		err = errors.New("no certificates")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%s): %w", ErrStore, s.Path, typ, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// decodePKCS12Key reads the key and chain of a PKCS#12 keystore.
func decodePKCS12Key(data []byte, pw string) (crypto.PrivateKey, []*x509.Certificate, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, pw)
	if err != nil {
		return nil, nil, err
	}
	return key, append([]*x509.Certificate{leaf}, cas...), nil
}

// decodePKCS12Trust reads the certificates of a PKCS#12 truststore: Java's
// trusted-certificate entries, or else every certificate of a store that
// has a key too (as openssl writes them).
func decodePKCS12Trust(data []byte, pw string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(data, pw)
	if err == nil && len(certs) > 0 {
		return certs, nil
	}
	_, leaf, cas, chainErr := pkcs12.DecodeChain(data, pw)
	if chainErr != nil {
		if err != nil {
			return nil, err
		}
		return nil, chainErr
	}
	return append([]*x509.Certificate{leaf}, cas...), nil
}

// loadJKS opens a JKS file.
func loadJKS(data []byte, pw string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithOrderedAliases())
	if err := ks.Load(bytes.NewReader(data), []byte(pw)); err != nil {
		return ks, err
	}
	return ks, nil
}

// decodeJKSKey reads the first private-key entry of a JKS keystore; as in
// ZooKeeper, the key's password is the store's.
func decodeJKSKey(data []byte, pw string) (crypto.PrivateKey, []*x509.Certificate, error) {
	ks, err := loadJKS(data, pw)
	if err != nil {
		return nil, nil, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		entry, err := ks.GetPrivateKeyEntry(alias, []byte(pw))
		if err != nil {
			return nil, nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
		if err != nil {
			return nil, nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		chain, err := parseJKSCerts(entry.CertificateChain)
		return key, chain, err
	}
	return nil, nil, errors.New("no private key entry")
}

// decodeJKSTrust reads every certificate of a JKS truststore: trusted
// certificate entries and the chains of key entries.
func decodeJKSTrust(data []byte, pw string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, pw)
	if err != nil {
		return nil, err
	}
	var raw []keystore.Certificate
	for _, alias := range ks.Aliases() {
		if ks.IsTrustedCertificateEntry(alias) {
			entry, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			raw = append(raw, entry.Certificate)
			continue
		}
		chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", alias, err)
		}
		raw = append(raw, chain...)
	}
	return parseJKSCerts(raw)
}

// parseJKSCerts parses the X.509 certificates of JKS entries.
func parseJKSCerts(raw []keystore.Certificate) ([]*x509.Certificate, error) {
	out := make([]*x509.Certificate, 0, len(raw))
	for _, c := range raw {
		if c.Type != "X509" && c.Type != "X.509" {
			return nil, fmt.Errorf("certificate type %q is not X.509", c.Type)
		}
		cert, err := x509.ParseCertificate(c.Content)
		if err != nil {
			return nil, err
		}
		out = append(out, cert)
	}
	return out, nil
}

// decodePEMKey reads a PEM keystore: one unencrypted PKCS#8 private key
// ("PRIVATE KEY") and its certificate chain, leaf first, as ZooKeeper's PEM
// reader expects.
func decodePEMKey(data []byte) (crypto.PrivateKey, []*x509.Certificate, error) {
	var key crypto.PrivateKey
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case "PRIVATE KEY":
			if key != nil {
				return nil, nil, errors.New("more than one private key")
			}
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, nil, fmt.Errorf("private key: %w", err)
			}
			key = k
		case "ENCRYPTED PRIVATE KEY":
			return nil, nil, errors.New("encrypted PKCS#8 keys are not supported; use a PKCS12 keystore or an unencrypted key")
		case "RSA PRIVATE KEY", "EC PRIVATE KEY":
			return nil, nil, fmt.Errorf("%s is not PKCS#8; convert it with openssl pkcs8 -topk8 -nocrypt", block.Type)
		}
	}
	chain, err := decodePEMCerts(data)
	if err != nil {
		return nil, nil, err
	}
	return key, chain, nil
}

// decodePEMCerts returns every CERTIFICATE block of a PEM file.
func decodePEMCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate: %w", err)
		}
		out = append(out, cert)
	}
}
