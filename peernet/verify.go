package peernet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// reverseLookupTimeout bounds the reverse lookup of a connecting member's
// address when its certificate does not name the address itself.
const reverseLookupTimeout = 2 * time.Second

// clientConfig is the TLS configuration for dialing the member at host,
// connected at remote: this member's certificate, and the member's
// certificate checked against the quorum truststore and, with
// hostnameVerification, against host or else the address connected to
// or its host names (ZooKeeper checks the address and its host name).
func (n *Network) clientConfig(host string, remote net.Addr) *tls.Config {
	base := n.tlsBase()
	cert := &base.Certificates[0]
	cfg := &tls.Config{
		// Sent whatever CAs the member asks for, so that a member with an
		// untrusted certificate is told so, not that it sent none.
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil },
		MinVersion:           base.MinVersion,
		MaxVersion:           base.MaxVersion,
		CipherSuites:         base.CipherSuites,
		InsecureSkipVerify:   true, // verifyPeer below does the verification
	}
	if net.ParseIP(host) == nil {
		cfg.ServerName = host
	}
	roots := base.ClientCAs
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the member sent no certificate")
		}
		if err := verifyChain(cs.PeerCertificates, roots); err != nil {
			return err
		}
		if !n.verifyHost {
			return nil
		}
		leaf := cs.PeerCertificates[0]
		if leaf.VerifyHostname(host) == nil {
			return nil
		}
		return verifyAddress(leaf, remote)
	}
	return cfg
}

// serverConfig is the TLS configuration for a member connecting from
// remote: with clientAuth need (the default) it must send a certificate
// that chains to the truststore and, with hostnameVerification, names its
// address or the address's host name, as ZooKeeper checks members.
func (n *Network) serverConfig(remote net.Addr) *tls.Config {
	base := n.tlsBase()
	cfg := base.Clone()
	cfg.ClientAuth = n.clientAuth
	roots := base.ClientCAs
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil // only when clientAuth is want or none
		}
		if err := verifyChain(cs.PeerCertificates, roots); err != nil {
			return err
		}
		if n.verifyHost {
			return verifyAddress(cs.PeerCertificates[0], remote)
		}
		return nil
	}
	return cfg
}

// verifyChain checks a member's chain against roots (nil: the system's),
// for any key usage: a member's certificate serves as client and server.
func verifyChain(chain []*x509.Certificate, roots *x509.CertPool) error {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return fmt.Errorf("certificate %q not trusted: %w", chain[0].Subject.String(), err)
	}
	return nil
}

// verifyAddress checks that a connecting member's certificate names its
// IP address or, failing that, one of the address's host names.
func verifyAddress(cert *x509.Certificate, remote net.Addr) error {
	host, _, err := net.SplitHostPort(remote.String())
	if err != nil {
		host = remote.String()
	}
	if cert.VerifyHostname(host) == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), reverseLookupTimeout)
	defer cancel()
	names, _ := net.DefaultResolver.LookupAddr(ctx, host)
	for _, name := range names {
		if cert.VerifyHostname(strings.TrimSuffix(name, ".")) == nil {
			return nil
		}
	}
	return fmt.Errorf("hostname verification: certificate %q names neither %s nor its host names %v",
		cert.Subject.String(), host, names)
}
