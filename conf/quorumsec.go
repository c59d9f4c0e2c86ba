package conf

import "strings"

// Quorum is the security of the links between ensemble members: TLS
// (sslQuorum, portUnification, sslQuorumReloadCertFiles and the
// ssl.quorum.* keys) and SASL (the quorum.auth.* keys). The keys are
// zoo.cfg keys, also accepted as -D properties and, like the client TLS
// keys, with a "zookeeper." prefix.
type Quorum struct {
	// SSL is sslQuorum: members dial each other over TLS (default false).
	SSL bool
	// PortUnification is portUnification: the quorum ports accept TLS and
	// plaintext members alike (default false), for rolling upgrades.
	PortUnification bool
	// ReloadCertFiles is sslQuorumReloadCertFiles: new member connections
	// use the quorum keystore and truststore as they are on disk now
	// (default false: as loaded at startup).
	ReloadCertFiles bool
	// TLS is the ssl.quorum.* keys. A member's one certificate serves
	// both directions; hostnameVerification checks that a member's
	// certificate names the host it is reached at (the server.N host), or,
	// for a member that connects, its address.
	TLS TLSKeys
	// SASL is the quorum.auth.* keys.
	SASL QuorumSASL
}

// QuorumSASL is ZooKeeper's quorum.auth.* keys.
type QuorumSASL struct {
	// Enable is quorum.auth.enableSasl (default false).
	Enable bool
	// LearnerRequire is quorum.auth.learnerRequireSasl: this member
	// authenticates when it connects to another (default false: it
	// connects without authenticating).
	LearnerRequire bool
	// ServerRequire is quorum.auth.serverRequireSasl: members that do
	// not authenticate are refused (default false: let through).
	ServerRequire bool
	// LearnerLoginContext is quorum.auth.learner.saslLoginContext, the
	// JAAS section with this member's credentials (default QuorumLearner).
	LearnerLoginContext string
	// ServerLoginContext is quorum.auth.server.saslLoginContext, the JAAS
	// section listing the members' credentials (default QuorumServer).
	ServerLoginContext string
	// KerberosServicePrincipal is quorum.auth.kerberos.servicePrincipal
	// (default zkquorum/localhost); accepted, not used (no Kerberos
	// between members).
	KerberosServicePrincipal string
}

// DefaultQuorum is ZooKeeper 3.8's default: plaintext, no SASL.
func DefaultQuorum() Quorum {
	return Quorum{
		TLS: defaultTLSKeys(),
		SASL: QuorumSASL{LearnerLoginContext: "QuorumLearner", ServerLoginContext: "QuorumServer",
			KerberosServicePrincipal: "zkquorum/localhost"},
	}
}

// Secured reports whether member links use TLS or SASL at all (otherwise
// they are plain TCP, as before these keys existed).
func (q Quorum) Secured() bool {
	return q.SSL || q.PortUnification || q.SASL.Enable
}

// TLSConfigured reports whether the quorum ports speak TLS: sslQuorum, or
// portUnification (which accepts TLS members during a rolling upgrade).
func (q Quorum) TLSConfigured() bool { return q.SSL || q.PortUnification }

// setQuorumSecurityKey handles the member-link keys; name has no
// "zookeeper." prefix.
func (p *parser) setQuorumSecurityKey(key, name, v string) (bool, error) {
	q := &p.c.Quorum
	var err error
	switch name {
	case "sslQuorum":
		q.SSL, err = parseBool(key, v)
	case "portUnification":
		q.PortUnification, err = parseBool(key, v)
	case "sslQuorumReloadCertFiles":
		q.ReloadCertFiles, err = parseBool(key, v)
	case "quorum.auth.enableSasl":
		q.SASL.Enable, err = parseBool(key, v)
	case "quorum.auth.learnerRequireSasl":
		q.SASL.LearnerRequire, err = parseBool(key, v)
	case "quorum.auth.serverRequireSasl":
		q.SASL.ServerRequire, err = parseBool(key, v)
	case "quorum.auth.learner.saslLoginContext":
		q.SASL.LearnerLoginContext = v
	case "quorum.auth.server.saslLoginContext":
		q.SASL.ServerLoginContext = v
	case "quorum.auth.kerberos.servicePrincipal":
		q.SASL.KerberosServicePrincipal = v
	default:
		return p.setQuorumTLSKey(key, name, v)
	}
	return true, err
}

// setQuorumTLSKey handles the ssl.quorum.* keys zkserverd acts on.
func (p *parser) setQuorumTLSKey(key, name, v string) (bool, error) {
	rest, ok := strings.CutPrefix(name, "ssl.quorum.")
	if !ok {
		return false, nil
	}
	return setTLSKey(&p.c.Quorum.TLS, key, rest, v)
}

// validateQuorum checks the member-link keys as ZooKeeper does (the
// quorum.auth.* dependencies) and, for an ensemble, what a TLS quorum
// port and SASL need (a standalone server has no member links). The JAAS
// sections are checked when the server starts (they live in another file).
func (c Config) validateQuorum(v *validator) {
	q := c.Quorum
	v.check(q.SASL.Enable || !q.SASL.ServerRequire, "quorum.auth.serverRequireSasl", "true",
		"needs quorum.auth.enableSasl=true")
	v.check(q.SASL.Enable || !q.SASL.LearnerRequire, "quorum.auth.learnerRequireSasl", "true",
		"needs quorum.auth.enableSasl=true")
	v.check(q.SASL.LearnerRequire || !q.SASL.ServerRequire, "quorum.auth.serverRequireSasl", "true",
		"needs quorum.auth.learnerRequireSasl=true")
	if !c.Distributed() {
		return
	}
	if q.SASL.Enable {
		v.check(c.SASL.JAASConfigFile != "", "quorum.auth.enableSasl", "true",
			"needs a JAAS file (java.security.auth.login.config) with the %s and %s sections",
			q.SASL.ServerLoginContext, q.SASL.LearnerLoginContext)
		v.check(q.SASL.LearnerLoginContext != "", "quorum.auth.learner.saslLoginContext", "", "must not be empty")
		v.check(q.SASL.ServerLoginContext != "", "quorum.auth.server.saslLoginContext", "", "must not be empty")
	}
	if !q.TLSConfigured() {
		return
	}
	key := "sslQuorum"
	if !q.SSL {
		key = "portUnification"
	}
	v.check(q.TLS.KeyStore.Location != "", "ssl.quorum.keyStore.location", "", "must be set when %s=true", key)
	for _, proto := range append([]string{q.TLS.Protocol}, q.TLS.EnabledProtocols...) {
		v.check(KnownTLSProtocol(proto), "ssl.quorum.protocol", proto, "is not a TLS protocol (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3, TLS)")
	}
}
