package server

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/sasl"
)

// saslSetup is the server's SASL login (the sasl request, opcode 102) and
// enforced authentication, fixed when the server is built.
type saslSetup struct {
	// mechanism starts a connection's exchange; nil when the JAAS file has
	// no usable server section, and then every sasl request gets an empty
	// OK, as from a ZooKeeper server without a SASL login (and, as there,
	// sasl requests do not keep a session alive: conn_dispatch.go).
	mechanism   sasl.Factory
	names       sasl.NameRules
	superUsers  []string
	allowFailed bool
	// enforced are the schemes a connection needs an identity of before
	// any request other than auth and sasl is served (nil: none);
	// required means they include sasl.
	enforced []string
	required bool
}

// newSASLSetup reads the JAAS file and checks the enforced schemes, which
// must name registered providers, as ZooKeeper requires at startup.
func newSASLSetup(cfg conf.Config, reg *acl.Registry, logger *slog.Logger) (saslSetup, error) {
	c := cfg.SASL
	names, err := newNameRules(c)
	if err != nil {
		return saslSetup{}, err
	}
	st := saslSetup{
		names:       names,
		superUsers:  c.SuperUsers,
		allowFailed: c.AllowFailedClients,
		enforced:    c.EnforcedSchemes(),
		required:    c.SASLRequired(),
	}
	for _, scheme := range st.enforced {
		if _, ok := reg.Provider(scheme); !ok {
			return saslSetup{}, fmt.Errorf("server: enforce.auth.schemes: authentication scheme %q is not available (add an authProvider.N for it)", scheme)
		}
	}
	if c.JAASConfigFile == "" {
		return st, nil
	}
	props := sasl.JavaProperties(c.JVMProperties)
	path, err := sasl.ResolveJAASPath(c.JAASConfigFile, props)
	if err != nil {
		return saslSetup{}, fmt.Errorf("server: %w", err)
	}
	j, err := sasl.LoadJAASWith(path, props)
	if err != nil {
		return saslSetup{}, fmt.Errorf("server: java.security.auth.login.config: %w", err)
	}
	setup, err := sasl.NewFactory(j, sasl.Options{Section: c.ServerSection, SuperPassword: c.SuperPassword, Krb5Config: c.Krb5ConfigFile, Krb5Realm: c.Krb5Realm})
	if err != nil {
		return saslSetup{}, fmt.Errorf("server: java.security.auth.login.config %s: %w", c.JAASConfigFile, err)
	}
	if setup.Factory == nil {
		logger.Warn("no SASL login on the client port", "jaas", c.JAASConfigFile, "reason", setup.Reason)
		return st, nil
	}
	attrs := []any{"jaas", c.JAASConfigFile, "section", c.ServerSection, "mechanisms", setup.Mechanisms}
	if setup.Kerberos != nil {
		attrs = append(attrs, "principal", setup.Kerberos.Principal())
	}
	logger.Info("SASL login on the client port", attrs...)
	st.mechanism = setup.Factory
	return st, nil
}

// newNameRules reads zookeeper.security.auth_to_local and the Kerberos
// default realm its DEFAULT rule maps.
func newNameRules(c conf.SASL) (sasl.NameRules, error) {
	rules, err := sasl.ParseAuthToLocal(c.AuthToLocal)
	if err != nil {
		return sasl.NameRules{}, fmt.Errorf("server: zookeeper.security.auth_to_local: %w", err)
	}
	realm, loaded := sasl.DefaultRealm(c.Krb5ConfigFile)
	if c.Krb5Realm != "" {
		realm, loaded = c.Krb5Realm, true
	}
	if !loaded && c.RequireKerberosConfig {
		return sasl.NameRules{}, fmt.Errorf("server: zookeeper.requireKerberosConfig: the Kerberos configuration %q does not load", cmp.Or(c.Krb5ConfigFile, sasl.DefaultKrb5Conf))
	}
	return sasl.NameRules{RemoveHost: c.RemoveHostFromPrincipal, RemoveRealm: c.RemoveRealmFromPrincipal,
		Rules: rules, DefaultRealm: realm}, nil
}

// handleSASL processes a sasl request on the reader goroutine, which owns
// the connection's exchange, so that the identity it adds applies to every
// later request. The reply (zxid 0) goes through the pipeline to keep reply
// order. It returns false when the connection closes.
func (c *conn) handleSASL(xid int32, d *jute.Decoder, now time.Time) bool {
	var tok jute.SASLToken
	tok.Decode(d)
	if d.Err() != nil {
		// ZooKeeper closes the connection without a reply, as for auth.
		c.log.Warn("undecodable sasl request; closing", "err", d.Err())
		return false
	}
	st := &c.s.sasl
	if st.mechanism == nil {
		c.replySASL(xid, jute.OK, nil, now)
		return true
	}
	if c.saslMech == nil {
		c.saslMech = st.mechanism()
	}
	out, err := c.saslMech.Evaluate(tok.Token)
	if err != nil {
		return c.saslFailed(xid, err, now)
	}
	if c.saslMech.Complete() {
		id, err := st.names.Identity(c.saslMech.AuthenticationID(), c.saslMech.AuthorizationID())
		if id == "" {
			return c.saslFailed(xid, fmt.Errorf("%w: %w", sasl.ErrFailed, err), now)
		}
		if err != nil {
			// ZooKeeper logs this too and keeps the name unmapped.
			c.log.Warn("SASL name not mapped by the auth_to_local rules; using it whole", "err", err)
		}
		c.saslAuthenticated(id)
	}
	c.replySASL(xid, jute.OK, out, now)
	return true
}

// saslAuthenticated gives the connection sasl:ID, and super: when ID is a
// configured super user.
func (c *conn) saslAuthenticated(id string) {
	ids := []jute.ID{{Scheme: acl.SchemeSASL, ID: id}}
	super := slices.Contains(c.s.sasl.superUsers, id)
	if super {
		ids = append(ids, jute.ID{Scheme: acl.SchemeSuper, ID: ""})
	}
	c.addIDs(ids)
	c.orderIDsLikeJava()
	c.log.Info("SASL login", "session", hexID(c.sessionID.Load()), "id", id, "super", super)
}

// saslFailed answers a failed exchange as ZooKeeper does: with
// allowSaslFailedClients (and sasl not enforced) an empty OK and the
// connection stays; otherwise AuthFailed (SessionClosedRequireSaslAuth when
// sasl is enforced) and the connection closes. The session stays alive.
func (c *conn) saslFailed(xid int32, err error, now time.Time) bool {
	c.s.stats.authFailed.Add(1)
	st := &c.s.sasl
	if st.allowFailed && !st.required {
		c.log.Warn("SASL login failed; keeping the connection (allowSaslFailedClients)", "err", err)
		c.replySASL(xid, jute.OK, nil, now)
		return true
	}
	code := jute.AuthFailed
	if st.required {
		code = jute.SessionClosedRequireSaslAuth
	}
	c.log.Warn("SASL login failed; closing", "err", err, "reply", code)
	c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpSASL, received: now, closeAfter: true,
		frame: errorFrame(xid, 0, code, &jute.SASLToken{})})
	return false
}

// replySASL queues a sasl reply carrying token (nil: a null buffer).
func (c *conn) replySASL(xid int32, code jute.Code, token []byte, now time.Time) {
	c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpSASL, received: now,
		frame: replyFrame(xid, 0, code, &jute.SASLToken{Token: token})})
}

// refuseUnauthenticated refuses a request of a connection without an
// identity of an enforced scheme, as ZooKeeper's AuthenticationHelper does:
// SessionClosedRequireSaslAuth (header only, zxid 0), then the connection
// closes. auth and sasl requests are never refused. It reports whether it
// refused.
func (c *conn) refuseUnauthenticated(h jute.RequestHeader, now time.Time) bool {
	enforced := c.s.sasl.enforced
	if len(enforced) == 0 || h.Type == jute.OpAuth || h.Type == jute.OpSASL {
		return false
	}
	for _, id := range c.authIDs() {
		if slices.Contains(enforced, id.Scheme) {
			return false
		}
	}
	c.log.Warn("request without the required authentication; closing", "op", h.Type, "required", enforced)
	c.enqueue(&pending{kind: kindReply, xid: h.Xid, op: h.Type, received: now, closeAfter: true,
		frame: replyFrame(h.Xid, 0, jute.SessionClosedRequireSaslAuth, nil)})
	return true
}
