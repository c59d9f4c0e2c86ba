package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkserverd/zkserverd/conf"
)

// ErrConfig marks a TLS setting that cannot be served.
var ErrConfig = errors.New("tlsconf: bad TLS setting")

// Options is a server-side TLS configuration in ZooKeeper's terms.
type Options struct {
	KeyStore Store
	// TrustStore holds the CAs client certificates must chain to; a zero
	// Store (no Path) means the system's roots, as a JVM uses its cacerts.
	TrustStore Store
	// ClientAuth is "need" (also ""), "want" or "none".
	ClientAuth string
	// Protocol is ssl.protocol ("" = TLSv1.2); EnabledProtocols, when not
	// empty, replaces it as the set of versions served.
	Protocol         string
	EnabledProtocols []string
	// CipherSuites are Java (IANA) names for TLS 1.0-1.2; empty means
	// ZooKeeper's default list. TLS 1.3 suites are always Go's.
	CipherSuites []string
}

// defaultCipherSuites is ZooKeeper 3.8's default list (Java 9 and later:
// GCM first), less the suites Go does not implement.
var defaultCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
}

// Build loads the stores and returns the tls.Config they describe, and
// notes about settings it could only partly honour (cipher suite names Go
// does not implement).
func Build(o Options) (*tls.Config, []string, error) {
	minV, maxV, err := versions(o.Protocol, o.EnabledProtocols)
	if err != nil {
		return nil, nil, err
	}
	suites, notes, err := cipherSuites(o.CipherSuites, minV)
	if err != nil {
		return nil, nil, err
	}
	auth, err := clientAuth(o.ClientAuth)
	if err != nil {
		return nil, nil, err
	}
	cert, err := LoadKeyStore(o.KeyStore)
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   auth,
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
	}
	if o.TrustStore.Path != "" {
		if cfg.ClientCAs, err = LoadTrustStore(o.TrustStore); err != nil {
			return nil, nil, err
		}
	}
	return cfg, notes, nil
}

// clientAuth maps ssl.clientAuth to Go's policy.
func clientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.ToLower(v) {
	case "", "need":
		return tls.RequireAndVerifyClientCert, nil
	case "want":
		return tls.VerifyClientCertIfGiven, nil
	case "none":
		return tls.NoClientCert, nil
	}
	return 0, fmt.Errorf("%w: ssl.clientAuth %q is not need, want or none", ErrConfig, v)
}

// protocolVersions maps Java protocol names to the TLS versions they
// enable; "TLS" (a generic Java context) means TLS 1.2 and 1.3.
var protocolVersions = map[string][2]uint16{
	"TLSv1":   {tls.VersionTLS10, tls.VersionTLS10},
	"TLSv1.1": {tls.VersionTLS11, tls.VersionTLS11},
	"TLSv1.2": {tls.VersionTLS12, tls.VersionTLS12},
	"TLSv1.3": {tls.VersionTLS13, tls.VersionTLS13},
	"TLS":     {tls.VersionTLS12, tls.VersionTLS13},
}

// versions returns the range of TLS versions served: that of the enabled
// protocols, or of the protocol alone (default TLSv1.2). Go serves a
// contiguous range, so a gap in the list is filled.
func versions(protocol string, enabled []string) (minV, maxV uint16, err error) {
	names := enabled
	if len(names) == 0 {
		names = []string{cmpOr(protocol, "TLSv1.2")}
	}
	for _, n := range names {
		r, ok := protocolVersions[strings.TrimSpace(n)]
		if !ok {
			return 0, 0, fmt.Errorf("%w: protocol %q is not one of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3, TLS", ErrConfig, n)
		}
		if minV == 0 || r[0] < minV {
			minV = r[0]
		}
		maxV = max(maxV, r[1])
	}
	return minV, maxV, nil
}

// cmpOr returns v, or def when v is empty.
func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// cipherSuites maps Java cipher suite names to Go's suite ids. Names Go
// does not implement are skipped with a note, as are TLS 1.3 names (Go
// always offers its TLS 1.3 suites); it is an error when no suite is left
// for a range that includes TLS 1.2 or older.
func cipherSuites(names []string, minV uint16) ([]uint16, []string, error) {
	explicit := len(names) > 0
	if !explicit {
		names = defaultCipherSuites
	}
	byName := make(map[string]uint16)
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	var ids []uint16
	var notes []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		id, ok := byName[n]
		switch {
		case ok && slices.Contains(tls13Suites, id):
		case ok:
			ids = append(ids, id)
		case explicit:
			notes = append(notes, fmt.Sprintf("tlsconf: cipher suite %s is not implemented; skipped", n))
		}
	}
	if len(ids) == 0 && minV < tls.VersionTLS13 {
		return nil, notes, fmt.Errorf("%w: ssl.ciphersuites names no suite this server implements", ErrConfig)
	}
	return ids, notes, nil
}

// tls13Suites are the TLS 1.3 suites, which Go does not let a server pick.
var tls13Suites = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}

// OptionsFrom is the Options of one family of ZooKeeper's TLS keys:
// the client port's ssl.* or the member links' ssl.quorum.*.
func OptionsFrom(k conf.TLSKeys) Options {
	store := func(s conf.Store) Store {
		return Store{Path: s.Location, Password: s.Password, PasswordPath: s.PasswordPath, Type: s.Type}
	}
	return Options{
		KeyStore:         store(k.KeyStore),
		TrustStore:       store(k.TrustStore),
		ClientAuth:       k.ClientAuth,
		Protocol:         k.Protocol,
		EnabledProtocols: k.EnabledProtocols,
		CipherSuites:     k.CipherSuites,
	}
}
