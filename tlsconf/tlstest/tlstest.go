// Package tlstest makes certificate authorities, certificates and keystore
// files for tests: PEM files, PKCS12 (go-pkcs12's encoder) and JKS
// (keystore-go's writer), so that no external tool is needed. Imported by
// tests only.
package tlstest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// Cert is a certificate with its private key and the chain above it.
type Cert struct {
	Cert  *x509.Certificate
	Key   crypto.Signer
	Chain []*x509.Certificate // issuers, nearest first (empty for a root)
}

// Options shapes a certificate; the zero value is a leaf valid for an hour
// around now, for 127.0.0.1 and localhost, usable by servers and clients.
type Options struct {
	NotBefore, NotAfter time.Time
	IsCA                bool
	// Hosts, when not nil, replaces the names the certificate is valid
	// for: IP addresses become IP SANs, other names DNS SANs.
	Hosts []string
}

// NewCA returns a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *Cert {
	t.Helper()
	return issue(t, pkix.Name{CommonName: cn, Organization: []string{"zkserverd tests"}}, nil, Options{IsCA: true})
}

// Issue returns a certificate for subject signed by ca.
func (ca *Cert) Issue(t testing.TB, subject pkix.Name, opts Options) *Cert {
	t.Helper()
	return issue(t, subject, ca, opts)
}

// issue creates a certificate; parent nil means self-signed.
func issue(t testing.TB, subject pkix.Name, parent *Cert, opts Options) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	if opts.NotBefore.IsZero() {
		opts.NotBefore = time.Now().Add(-time.Hour)
	}
	if opts.NotAfter.IsZero() {
		opts.NotAfter = time.Now().Add(time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    opts.NotBefore,
		NotAfter:     opts.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if opts.Hosts != nil {
		tmpl.DNSNames, tmpl.IPAddresses = nil, nil
		for _, h := range opts.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	if opts.IsCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.ExtKeyUsage, tmpl.DNSNames, tmpl.IPAddresses = nil, nil, nil
	}
	signer, parentCert := crypto.Signer(key), tmpl
	var chain []*x509.Certificate
	if parent != nil {
		signer, parentCert = parent.Key, parent.Cert
		chain = append([]*x509.Certificate{parent.Cert}, parent.Chain...)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &Cert{Cert: cert, Key: key, Chain: chain}
}

// TLS returns c as a tls.Certificate (for a client's configuration).
func (c *Cert) TLS() tls.Certificate {
	out := tls.Certificate{PrivateKey: c.Key, Leaf: c.Cert, Certificate: [][]byte{c.Cert.Raw}}
	for _, p := range c.Chain {
		out.Certificate = append(out.Certificate, p.Raw)
	}
	return out
}

// Pool returns a pool holding the given certificates.
func Pool(certs ...*Cert) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c.Cert)
	}
	return p
}

// PEMKeyStore is the PEM keystore of c: its certificate chain, then its
// PKCS#8 private key.
func (c *Cert) PEMKeyStore(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, cert := range append([]*x509.Certificate{c.Cert}, c.Chain...) {
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return buf.Bytes()
}

// PKCS12KeyStore is the PKCS12 keystore of c under password.
func (c *Cert) PKCS12KeyStore(t testing.TB, password string) []byte {
	t.Helper()
	data, err := pkcs12.Modern.Encode(c.Key, c.Cert, c.Chain, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// JKSKeyStore is the JKS keystore of c, the store and the key under
// password.
func (c *Cert) JKSKeyStore(t testing.TB, password string) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	entry := keystore.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: der}
	for _, cert := range append([]*x509.Certificate{c.Cert}, c.Chain...) {
		entry.CertificateChain = append(entry.CertificateChain, keystore.Certificate{Type: "X509", Content: cert.Raw})
	}
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("server", entry, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return storeJKS(t, ks, password)
}

// PEMTrustStore is a PEM truststore holding certs.
func PEMTrustStore(certs ...*Cert) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
	}
	return buf.Bytes()
}

// PKCS12TrustStore is a Java-style PKCS12 truststore holding certs.
func PKCS12TrustStore(t testing.TB, password string, certs ...*Cert) []byte {
	t.Helper()
	var list []*x509.Certificate
	for _, c := range certs {
		list = append(list, c.Cert)
	}
	data, err := pkcs12.Modern.EncodeTrustStore(list, password)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// JKSTrustStore is a JKS truststore holding certs as trusted entries.
func JKSTrustStore(t testing.TB, password string, certs ...*Cert) []byte {
	t.Helper()
	ks := keystore.New()
	for i, c := range certs {
		entry := keystore.TrustedCertificateEntry{CreationTime: time.Now(),
			Certificate: keystore.Certificate{Type: "X509", Content: c.Cert.Raw}}
		if err := ks.SetTrustedCertificateEntry("ca"+string(rune('a'+i)), entry); err != nil {
			t.Fatal(err)
		}
	}
	return storeJKS(t, ks, password)
}

// storeJKS serializes a JKS store.
func storeJKS(t testing.TB, ks keystore.KeyStore, password string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WriteFile writes data to dir/name, through a temporary file renamed
// into place (as an operator replacing a keystore should), and returns the
// path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}
