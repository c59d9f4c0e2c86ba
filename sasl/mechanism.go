package sasl

import (
	"errors"
	"fmt"
	"maps"
	"strings"
)

// ErrFailed means a SASL exchange failed: bad credentials, a malformed
// token, or a token after completion. The server answers it as ZooKeeper
// answers a SaslException.
var ErrFailed = errors.New("sasl: authentication failed")

// Mechanism is the server side of one SASL exchange on one connection. It is
// driven by one goroutine (the connection's reader) and is not safe for
// concurrent use.
type Mechanism interface {
	// Evaluate takes the client's token (empty for the first one of a
	// mechanism without an initial response) and returns the token to send
	// back (nil for none). An error wraps ErrFailed.
	Evaluate(token []byte) ([]byte, error)
	// Complete reports whether the exchange has succeeded.
	Complete() bool
	// AuthenticationID is the authenticated user once Complete.
	AuthenticationID() string
	// AuthorizationID is the id the client asked to act as ("" when it
	// sent none), once Complete. NameRules.Identity decides what it gets.
	AuthorizationID() string
}

// Factory starts a Mechanism for a new exchange.
type Factory func() Mechanism

// Options are the server's SASL settings that shape a Factory.
type Options struct {
	// Section is the JAAS section of the server (zookeeper.sasl.serverconfig,
	// default "Server").
	Section string
	// SuperPassword replaces the JAAS password of the user "super"
	// (zookeeper.SASLAuthenticationProvider.superPassword); "" keeps it.
	SuperPassword string
	// Krb5Config is java.security.krb5.conf ("" = DefaultKrb5Conf if it
	// loads).
	Krb5Config string
	// Krb5Realm is java.security.krb5.realm: when set, the default realm
	// instead of krb5.conf's default_realm.
	Krb5Realm string
}

// Setup is what a JAAS configuration gives the server.
type Setup struct {
	// Factory starts an exchange; nil means no SASL login.
	Factory Factory
	// Mechanisms names the mechanisms offered, e.g. [DIGEST-MD5 GSSAPI].
	Mechanisms []string
	// Reason says why there is no Factory.
	Reason string
	// Kerberos is the service identity when GSSAPI is offered.
	Kerberos *Kerberos
}

// NewFactory returns the mechanisms a JAAS configuration gives the server:
// DIGEST-MD5 over the section's user_NAME options, GSSAPI over the keytab
// of its Krb5LoginModule, or both. A section with neither gives no Factory
// (Setup.Reason says why); a Krb5LoginModule whose keytab or krb5.conf does
// not load is an error, as a failed JAAS login stops ZooKeeper's startup.
func NewFactory(j JAAS, opts Options) (Setup, error) {
	modules, ok := j[opts.Section]
	if !ok {
		return Setup{Reason: "no JAAS section " + opts.Section}, nil
	}
	var st Setup
	users := j.Users(opts.Section)
	if len(users) > 0 {
		if opts.SuperPassword != "" {
			users["super"] = opts.SuperPassword
		}
		st.Mechanisms = append(st.Mechanisms, "DIGEST-MD5")
	}
	for _, m := range modules {
		if m.Class != Krb5LoginModule {
			continue
		}
		if p := m.Options["principal"]; opts.Krb5Realm != "" && p != "" && !strings.Contains(p, "@") {
			m.Options = maps.Clone(m.Options)
			m.Options["principal"] = p + "@" + opts.Krb5Realm
		}
		k, err := LoadKerberos(m, opts.Krb5Config)
		if err != nil {
			return Setup{}, fmt.Errorf("JAAS section %s: %w", opts.Section, err)
		}
		st.Kerberos = k
		st.Mechanisms = append(st.Mechanisms, "GSSAPI")
		break
	}
	if len(st.Mechanisms) == 0 {
		st.Reason = "JAAS section " + opts.Section + " has no user_ entries and no " + Krb5LoginModule
		return st, nil
	}
	k := st.Kerberos
	if len(users) == 0 {
		users = nil
	}
	st.Factory = func() Mechanism { return &chooser{users: users, kerberos: k} }
	return st, nil
}

// chooser picks the mechanism of an exchange from the client's first
// token, since ZooKeeper's sasl request names none: DIGEST-MD5 starts with
// an empty token, GSSAPI with the client's InitialContextToken.
type chooser struct {
	users    map[string]string // DIGEST-MD5 users; nil: not offered
	kerberos *Kerberos         // nil: GSSAPI not offered
	m        Mechanism
}

// Evaluate passes the token to the chosen mechanism.
func (c *chooser) Evaluate(token []byte) ([]byte, error) {
	if c.m == nil {
		switch {
		case c.kerberos != nil && (len(token) > 0 || c.users == nil):
			c.m = NewGSSAPIServer(c.kerberos)
		default:
			c.m = NewDigestMD5Server(c.users)
		}
	}
	return c.m.Evaluate(token)
}

// Complete reports whether the chosen mechanism has succeeded.
func (c *chooser) Complete() bool { return c.m != nil && c.m.Complete() }

// AuthenticationID is the chosen mechanism's authenticated user.
func (c *chooser) AuthenticationID() string {
	if c.m == nil {
		return ""
	}
	return c.m.AuthenticationID()
}

// AuthorizationID is the chosen mechanism's requested authorization id.
func (c *chooser) AuthorizationID() string {
	if c.m == nil {
		return ""
	}
	return c.m.AuthorizationID()
}
