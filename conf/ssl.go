package conf

import (
	"strings"
)

// SSL is the TLS configuration of the client port: ZooKeeper's
// zookeeper.ssl.* properties (as zoo.cfg keys, with or without the
// "zookeeper." prefix, or as -D properties) and
// zookeeper.client.portUnification. Quorum TLS (ssl.quorum.*) is not here.
type SSL struct {
	KeyStore   Store // ssl.keyStore.*: the server's certificate and key
	TrustStore Store // ssl.trustStore.*: CAs that client certificates must chain to
	// ClientAuth is ssl.clientAuth, lower case: "need" (the default),
	// "want" or "none".
	ClientAuth string
	// Protocol is ssl.protocol, default "TLSv1.2".
	Protocol string
	// EnabledProtocols is ssl.enabledProtocols split on commas; nil means
	// just Protocol.
	EnabledProtocols []string
	// CipherSuites is ssl.ciphersuites split on commas (Java names); nil
	// means ZooKeeper's default list.
	CipherSuites []string
	// HostnameVerification is ssl.hostnameVerification (default true). As
	// in ZooKeeper, the server never checks a client certificate's host
	// name on the client port; the key matters to clients only.
	HostnameVerification bool
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
	return SSL{ClientAuth: "need", Protocol: "TLSv1.2", HostnameVerification: true, AuthProvider: "x509"}
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
	switch name {
	case "ssl.keyStore.location":
		s.KeyStore.Location = v
	case "ssl.keyStore.password":
		s.KeyStore.Password = v
	case "ssl.keyStore.passwordPath":
		s.KeyStore.PasswordPath = v
	case "ssl.keyStore.type":
		s.KeyStore.Type, err = parseStoreType(key, v)
	case "ssl.trustStore.location":
		s.TrustStore.Location = v
	case "ssl.trustStore.password":
		s.TrustStore.Password = v
	case "ssl.trustStore.passwordPath":
		s.TrustStore.PasswordPath = v
	case "ssl.trustStore.type":
		s.TrustStore.Type, err = parseStoreType(key, v)
	case "ssl.clientAuth":
		s.ClientAuth, err = parseClientAuth(key, v)
	case "ssl.protocol":
		s.Protocol = v
	case "ssl.enabledProtocols":
		s.EnabledProtocols = splitList(v)
	case "ssl.ciphersuites":
		s.CipherSuites = splitList(v)
	case "ssl.hostnameVerification":
		s.HostnameVerification, err = parseBool(key, v)
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
		return false, nil
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
