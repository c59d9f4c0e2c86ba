package conf

import (
	"slices"
	"strings"
)

// SSL is the TLS configuration of the client port: ZooKeeper's
// zookeeper.ssl.* properties (as zoo.cfg keys, with or without the
// "zookeeper." prefix, or as -D properties) and
// zookeeper.client.portUnification. Quorum TLS (ssl.quorum.*) is not here.
type SSL struct {
	// TLSKeys are the ssl.* keys. As in ZooKeeper, the server never checks
	// a client certificate's host name on the client port:
	// ssl.hostnameVerification matters to clients only.
	TLSKeys
	// AuthProvider is ssl.authProvider: the scheme of the provider that
	// turns a verified client certificate into identities (default "x509").
	AuthProvider string
	// PortUnification is client.portUnification: TLS and plaintext clients
	// on clientPort (default false).
	PortUnification bool
	// CertReload is client.certReload: reload the keystore and truststore
	// when their files change (default false, as in ZooKeeper 3.8, which
	// reads it with Boolean.getBoolean: only "true", in any case, is true).
	CertReload bool
}

// TLSKeys are the keys ZooKeeper's client port (ssl.*) and member links
// (ssl.quorum.*) both have; below, ssl.X stands for either prefix.
type TLSKeys struct {
	KeyStore   Store // ssl.keyStore.*: this server's certificate and key
	TrustStore Store // ssl.trustStore.*: CAs the peers' certificates must chain to
	// ClientAuth is ssl.clientAuth, lower case: "need" (the default),
	// "want" or "none", for the certificates of peers that connect.
	ClientAuth string
	// Protocol is ssl.protocol, default "TLSv1.2".
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols split on commas; nil means
	// just Protocol.
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites split on commas (Java names); nil
	// means ZooKeeper's default list.
	CipherSuites []string
	// HostnameVerification is ssl.hostnameVerification (default true).
	HostnameVerification bool
}

// defaultTLSKeys are ZooKeeper 3.8's defaults of both key families.
func defaultTLSKeys() TLSKeys {
	return TLSKeys{ClientAuth: "need", Protocol: "TLSv1.2", HostnameVerification: true}
}

// setTLSKey sets the key of k that name, less its prefix ("ssl." or
// "ssl.quorum."), is; it reports false for a name that is none of them.
func setTLSKey(k *TLSKeys, key, name, v string) (bool, error) {
	var err error
	switch name {
	case "keyStore.location":
		k.KeyStore.Location = v
	case "keyStore.password":
		k.KeyStore.Password = v
	case "keyStore.passwordPath":
		k.KeyStore.PasswordPath = v
	case "keyStore.type":
		k.KeyStore.Type, err = parseStoreType(key, v)
	case "trustStore.location":
		k.TrustStore.Location = v
	case "trustStore.password":
		k.TrustStore.Password = v
	case "trustStore.passwordPath":
		k.TrustStore.PasswordPath = v
	case "trustStore.type":
		k.TrustStore.Type, err = parseStoreType(key, v)
	case "clientAuth":
		k.ClientAuth, err = parseClientAuth(key, v)
	case "protocol":
		k.Protocol = v
	case "enabledProtocols":
		k.EnabledProtocols = splitList(v)
	case "ciphersuites":
		k.CipherSuites = splitList(v)
	case "hostnameVerification":
		k.HostnameVerification, err = parseBool(key, v)
	default:
		return false, nil
	}
	return true, err
}

// Store is one keystore or truststore file.
type Store struct {
	Location string // .location: the file ("" = none)
	Password string // .password
	// PasswordPath is .passwordPath: a file holding the password, which
	// wins over Password (one trailing line separator is dropped).
	PasswordPath string
	// Type is .type as written: "PKCS12", "JKS", "PEM" (any case), or ""
	// to infer it from the file name's extension.
	Type string
}

// DefaultSSL is ZooKeeper 3.8's client TLS configuration.
func DefaultSSL() SSL {
	return SSL{TLSKeys: defaultTLSKeys(), AuthProvider: "x509"}
}

// TLSEnabled reports whether any client port speaks TLS: a secure client
// port, or port unification on the plaintext one.
func (c Config) TLSEnabled() bool {
	return c.SecureClientPort != 0 || (c.SSL.PortUnification && !c.NoClientPort)
}

// setSSLKey handles the client TLS keys; name has no "zookeeper." prefix.
func (p *parser) setSSLKey(key, name, v string) (bool, error) {
	s := &p.c.SSL
	var err error
	if rest, ok := strings.CutPrefix(name, "ssl."); ok && !strings.HasPrefix(rest, "quorum.") {
		if ok, err := setTLSKey(&s.TLSKeys, key, rest, v); ok {
			return true, err
		}
	}
	switch name {
	case "ssl.authProvider":
		s.AuthProvider = v
	case "client.portUnification":
		s.PortUnification, err = parseBool(key, v)
	case "client.certReload":
		s.CertReload = strings.EqualFold(v, "true")
		if !s.CertReload && !strings.EqualFold(v, "false") {
			p.warnf("conf: %s: %q is not true; certificate reload stays off", key, v)
		}
	default:
		// Kept in Extra by the caller; some values are refused.
		return false, checkRefusedSecurityKey(key, name, v)
	}
	return true, err
}

// parseStoreType accepts the keystore types zkserverd reads, in any case
// (ZooKeeper upper-cases the value); "" means "from the file name".
func parseStoreType(key, v string) (string, error) {
	switch strings.ToUpper(v) {
	case "", "PKCS12", "JKS", "PEM":
		return strings.ToUpper(v), nil
	case "BCFKS":
		return "", keyErr(key, v, "is not supported (PKCS12, JKS or PEM)")
	}
	return "", keyErr(key, v, "is not a keystore type (PKCS12, JKS or PEM)")
}

// parseClientAuth accepts need, want or none in any case; "" is need, as
// in ZooKeeper.
func parseClientAuth(key, v string) (string, error) {
	switch t := strings.ToLower(v); t {
	case "":
		return "need", nil
	case "need", "want", "none":
		return t, nil
	}
	return "", keyErr(key, v, "is not need, want or none")
}

// validateSSL checks the client TLS keys when a port speaks TLS.
func (c Config) validateSSL(v *validator) {
	v.check(!(c.NoClientPort && c.SecureClientPort == 0), "clientPort", "", "is not set and neither is secureClientPort")
	if !c.TLSEnabled() {
		return
	}
	v.check(c.SSL.KeyStore.Location != "", "ssl.keyStore.location", "", "must be set for a TLS client port")
	v.check(c.SSL.AuthProvider != "", "ssl.authProvider", "", "must not be empty")
	for _, proto := range append([]string{c.SSL.Protocol}, c.SSL.EnabledProtocols...) {
		v.check(KnownTLSProtocol(proto), "ssl.protocol", proto, "is not a TLS protocol (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3, TLS)")
	}
}

// KnownTLSProtocol reports whether name is a Java TLS protocol name that
// zkserverd can serve.
func KnownTLSProtocol(name string) bool {
	switch name {
	case "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3", "TLS":
		return true
	}
	return false
}

// ignoredSecurityKey returns why zkserverd accepts one of ZooKeeper 3.8's
// server-side security properties without acting on it ("" for other
// keys); name has no "zookeeper." prefix.
func ignoredSecurityKey(name string) string {
	switch name {
	case "ssl.allowReverseDnsLookup":
		return "host name checks are a client's; the server never checks a client certificate's host name"
	case "ssl.handshakeDetectionTimeoutMillis":
		return "the TLS detection on a unified port runs under nio.sessionlessCnxnTimeout"
	case "fips-mode":
		return "only changes which Java trust manager checks host names, which the server does not do"
	case "netty.server.outstandingHandshake.limit":
		return "Netty's limit; handshakes run on each connection's own goroutine under nio.sessionlessCnxnTimeout"
	case "netty.server.earlyDropSecureConnectionHandshakes":
		return "Netty's option"
	case "netty.advancedFlowControl.enabled":
		return "Netty's option"
	case "kinit":
		return "the server reads its keytab and never runs kinit"
	case "ensembleAuthName":
		return "EnsembleAuthenticationProvider is not available"
	}
	return ""
}

// IgnoredSecurityKeys returns, for each ZooKeeper security key set in
// the configuration that zkserverd accepts but does not act on, a line
// naming the key and why, for the startup log (sorted).
func (c Config) IgnoredSecurityKeys() []string {
	var out []string
	for key := range c.Extra {
		name := strings.TrimPrefix(key, sysPropPrefix)
		if reason := ignoredSecurityKey(name); reason != "" {
			out = append(out, key+": accepted, not acted on: "+reason)
		}
	}
	slices.Sort(out)
	return out
}

// checkRefusedSecurityKey refuses the ZooKeeper security settings that
// zkserverd cannot honour and that must not be silently dropped: turning on
// certificate revocation checks, a Java SSLContext supplier class, and a
// digest provider other than ZooKeeper's default (SHA1, enabled).
func checkRefusedSecurityKey(key, name, v string) error {
	switch name {
	case "ssl.crl", "ssl.ocsp", "ssl.quorum.crl", "ssl.quorum.ocsp":
		// Java reads them with Boolean.parseBoolean.
		if strings.EqualFold(v, "true") {
			return keyErr(key, v, "certificate revocation checks (CRL, OCSP) are not supported; remove the key or set it to false")
		}
	case "ssl.context.supplier.class", "ssl.quorum.context.supplier.class":
		if v != "" {
			return keyErr(key, v, "a Java SSLContext supplier cannot run here; configure ssl.keyStore.* and ssl.trustStore.*")
		}
	case "DigestAuthenticationProvider.digestAlg":
		switch strings.ToUpper(v) {
		case "", "SHA1", "SHA-1", "SHA":
		default:
			return keyErr(key, v, "only SHA1 digests (ZooKeeper's default) are supported")
		}
	case "DigestAuthenticationProvider.enabled":
		if strings.EqualFold(v, "false") {
			return keyErr(key, v, "the digest scheme cannot be turned off")
		}
	}
	return nil
}
