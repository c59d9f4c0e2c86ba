package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
)

// newAuthRegistry builds the authentication providers of a server: the
// built-in schemes, the super digest, and every authProvider.N of zoo.cfg.
// A configured provider replaces a built-in of the same scheme, as in
// ZooKeeper; one this build cannot provide (sasl) is logged and skipped.
func newAuthRegistry(cfg conf.Config, logger *slog.Logger) (*acl.Registry, error) {
	var providers []acl.Provider
	for n, name := range cfg.AuthProviders {
		p, err := acl.NewProviderByName(name, cfg.Extra)
		if errors.Is(err, acl.ErrUnsupportedProvider) {
			logger.Warn("authentication provider not supported; skipped", "key", fmt.Sprintf("authProvider.%d", n), "provider", name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("server: authProvider.%d: %w", n, err)
		}
		providers = append(providers, p)
	}
	return acl.NewRegistry(acl.Options{SuperDigest: cfg.SuperDigest, Providers: providers}), nil
}

// initialIDs are the identities every connection starts with: its address.
func initialIDs(remote net.Addr) []jute.ID { return acl.ConnIDs(remote) }

// handleAuth processes an auth packet on the reader goroutine, so that the
// identities it adds apply to every later request of the connection. The
// reply goes through the pipeline to keep reply order. A failure sends
// AuthFailed and closes the connection; the session stays alive.
func (c *conn) handleAuth(xid int32, d *jute.Decoder, now time.Time) bool {
	var ap jute.AuthPacket
	ap.Decode(d)
	if d.Err() != nil {
		c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpAuth, received: now,
			frame: replyFrame(xid, 0, jute.MarshallingError, nil)})
		return true
	}
	ids, err := c.s.auth.Authenticate(ap.Scheme, acl.ConnInfo{RemoteAddr: c.nc.RemoteAddr()}, ap.Auth)
	if err != nil {
		c.s.stats.authFailed.Add(1)
		c.log.Warn("authentication failed; closing", "scheme", ap.Scheme, "err", err)
		c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpAuth, received: now, closeAfter: true,
			frame: replyFrame(xid, 0, jute.AuthFailed, nil)})
		return false
	}
	c.addIDs(ids)
	c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpAuth, received: now,
		frame: replyFrame(xid, 0, jute.OK, nil)})
	return true
}
