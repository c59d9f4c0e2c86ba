package conf

import (
	"slices"
	"strings"
)

// SASL is the client port's SASL login and enforced authentication: the
// system properties ZooKeeper reads for them, accepted as zoo.cfg keys (with
// or without the "zookeeper." prefix) or as -D properties.
type SASL struct {
	// JAASConfigFile is java.security.auth.login.config: the JAAS file whose
	// server section lists the DIGEST-MD5 users and the Kerberos keytab ("" =
	// no SASL).
	JAASConfigFile string
	// Krb5ConfigFile is java.security.krb5.conf: the Kerberos configuration
	// the GSSAPI login reads (its default realm and clock skew); "" means
	// /etc/krb5.conf when it exists.
	Krb5ConfigFile string
	// Krb5Realm and Krb5KDC are java.security.krb5.realm and
	// java.security.krb5.kdc: as in Java, both or neither; the realm then
	// replaces krb5.conf's default_realm (the KDC is never contacted).
	Krb5Realm, Krb5KDC string
	// ServerSection is sasl.serverconfig, the JAAS section of the server
	// (default "Server").
	ServerSection string
	// SuperUsers are superUser and superUser.<anything>: SASL identities that
	// also get super:.
	SuperUsers []string
	// SuperPassword is SASLAuthenticationProvider.superPassword: the DIGEST-MD5
	// password of the user "super", replacing the JAAS one ("" = keep it).
	SuperPassword string
	// AllowFailedClients is allowSaslFailedClients: after a failed SASL login
	// the connection stays open (default false: AuthFailed, then closed).
	AllowFailedClients bool
	// RemoveHostFromPrincipal and RemoveRealmFromPrincipal are
	// kerberos.removeHostFromPrincipal and kerberos.removeRealmFromPrincipal.
	RemoveHostFromPrincipal  bool
	RemoveRealmFromPrincipal bool
	// AuthToLocal is security.auth_to_local: the Kerberos name rules that
	// give a principal's short name ("" = DEFAULT).
	AuthToLocal string
	// JVMProperties are the -D properties of SERVER_JVMFLAGS and JVMFLAGS
	// (what Parse was given), for ${name} in the JAAS file.
	JVMProperties map[string]string
	// RequireKerberosConfig is requireKerberosConfig: the Kerberos
	// configuration (java.security.krb5.conf or /etc/krb5.conf) must load.
	RequireKerberosConfig bool
	// EnforceAuthEnabled is enforce.auth.enabled: requests of a connection
	// with no identity of EnforceAuthSchemes are refused with
	// SessionClosedRequireSaslAuth and the connection closes.
	EnforceAuthEnabled bool
	// EnforceAuthSchemes is enforce.auth.schemes, split on commas.
	EnforceAuthSchemes []string
	// SessionRequireClientSASLAuth is sessionRequireClientSASLAuth: when
	// true it means enforce.auth.enabled=true with the scheme sasl, whatever
	// the enforce.auth.* keys say.
	SessionRequireClientSASLAuth bool
}

// DefaultSASL is ZooKeeper 3.8's default: no SASL, nothing enforced.
func DefaultSASL() SASL { return SASL{ServerSection: "Server"} }

// EnforcedSchemes returns the schemes a connection must have an identity of
// before its requests are served, or nil when nothing is enforced.
func (s SASL) EnforcedSchemes() []string {
	switch {
	case s.SessionRequireClientSASLAuth:
		return []string{"sasl"}
	case s.EnforceAuthEnabled:
		return s.EnforceAuthSchemes
	}
	return nil
}

// SASLRequired reports whether the enforced schemes include sasl, which
// turns a failed SASL login's AuthFailed into SessionClosedRequireSaslAuth.
func (s SASL) SASLRequired() bool { return slices.Contains(s.EnforcedSchemes(), "sasl") }

// setSASLKey handles the SASL and enforced-authentication keys; name has no
// "zookeeper." prefix.
func (p *parser) setSASLKey(key, name, v string) (bool, error) {
	s := &p.c.SASL
	var err error
	switch name {
	case "java.security.auth.login.config":
		s.JAASConfigFile = v
	case "java.security.krb5.conf":
		s.Krb5ConfigFile = v
	case "java.security.krb5.realm":
		s.Krb5Realm = v
	case "java.security.krb5.kdc":
		s.Krb5KDC = v
	case "sasl.serverconfig":
		s.ServerSection = v
	case "SASLAuthenticationProvider.superPassword":
		s.SuperPassword = v
	case "allowSaslFailedClients":
		s.AllowFailedClients, err = parseBool(key, v)
	case "kerberos.removeHostFromPrincipal":
		s.RemoveHostFromPrincipal, err = parseBool(key, v)
	case "kerberos.removeRealmFromPrincipal":
		s.RemoveRealmFromPrincipal, err = parseBool(key, v)
	case "security.auth_to_local":
		s.AuthToLocal = v
	case "requireKerberosConfig":
		s.RequireKerberosConfig, err = parseBool(key, v)
	case "enforce.auth.enabled":
		s.EnforceAuthEnabled, err = parseBool(key, v)
	case "enforce.auth.schemes":
		s.EnforceAuthSchemes = splitList(v)
	case "sessionRequireClientSASLAuth":
		s.SessionRequireClientSASLAuth, err = parseBool(key, v)
	default:
		if name != "superUser" && !strings.HasPrefix(name, "superUser.") {
			return false, nil
		}
		s.SuperUsers = append(s.SuperUsers, v)
		// The x509 provider also takes superUser from the extra keys.
		p.c.Extra[key] = v
	}
	return true, err
}

// validateSASL checks the enforced-authentication keys.
func (c Config) validateSASL(v *validator) {
	s := c.SASL
	v.check(!s.EnforceAuthEnabled || s.SessionRequireClientSASLAuth || len(s.EnforceAuthSchemes) > 0,
		"enforce.auth.schemes", "", "must be set when enforce.auth.enabled is true")
	v.check(s.ServerSection != "", "sasl.serverconfig", "", "must not be empty")
	v.check((s.Krb5Realm == "") == (s.Krb5KDC == ""), "java.security.krb5.realm", s.Krb5Realm,
		"and java.security.krb5.kdc must both be set or neither, as Java requires")
}
