package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"
	"unicode/utf16"

	"github.com/zkserverd/zkserverd/acl"
	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/jute"
)

// newAuthRegistry builds the authentication providers of a server: the
// built-in schemes, the super digest, and every authProvider.N of zoo.cfg.
// A configured provider replaces a built-in of the same scheme, as in
// ZooKeeper; one this build cannot provide is logged and skipped.
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
// AuthFailed and closes the connection, and an undecodable packet closes
// it without a reply; the session stays alive either way.
func (c *conn) handleAuth(xid int32, d *jute.Decoder, now time.Time) bool {
	var ap jute.AuthPacket
	ap.Decode(d)
	if d.Err() != nil {
		// ZooKeeper closes the connection without a reply.
		c.log.Warn("undecodable auth packet; closing", "err", d.Err())
		return false
	}
	ids, err := c.s.auth.Authenticate(ap.Scheme, acl.ConnInfo{RemoteAddr: c.nc.RemoteAddr()}, ap.Auth)
	if ap.Auth == nil && ap.Scheme == acl.SchemeDigest {
		// ZooKeeper's digest provider fails on a null credential buffer
		// (ip ignores the buffer).
		ids, err = nil, fmt.Errorf("null digest credentials: %w", jute.AuthFailed)
	}
	if err != nil {
		c.s.stats.authFailed.Add(1)
		c.log.Warn("authentication failed; closing", "scheme", ap.Scheme, "err", err)
		c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpAuth, received: now, closeAfter: true,
			frame: replyFrame(xid, 0, jute.AuthFailed, nil)})
		return false
	}
	c.addIDs(ids)
	c.orderIDsLikeJava()
	c.enqueue(&pending{kind: kindReply, xid: xid, op: jute.OpAuth, received: now,
		frame: replyFrame(xid, 0, jute.OK, nil)})
	return true
}

// orderIDsLikeJava puts the connection's identities in the order ZooKeeper
// keeps them. Its ServerCnxn holds them in a set backed by a
// ConcurrentHashMap, so whoAmI lists them, and the "auth" ACL scheme expands
// to them, in hash-bucket order rather than in the order they were added.
// c.ids is kept in that order after every change.
func (c *conn) orderIDsLikeJava() {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	javaSetOrder(c.ids)
}

// javaSetOrder sorts ids, given in insertion order, into the iteration order
// of a Java ConcurrentHashMap holding them: by bucket (the spread hash of
// org.apache.zookeeper.data.Id masked by the table size), and by insertion
// order within a bucket. The table starts at 16 buckets and doubles whenever
// it holds three quarters of its size. The order is exact as long as the map
// never resized (fewer than 12 ids); beyond that Java's rehash may reverse
// some entries of a bucket, which is not modelled.
func javaSetOrder(ids []jute.ID) {
	n := uint32(16)
	for uint32(len(ids)) >= n-n/4 {
		n *= 2
	}
	slices.SortStableFunc(ids, func(a, b jute.ID) int {
		return int(javaBucket(a, n)) - int(javaBucket(b, n))
	})
}

// javaBucket is the bucket of id in a ConcurrentHashMap table of n buckets.
func javaBucket(id jute.ID, n uint32) uint32 {
	h := uint32(17)
	h = 37*h + javaStringHash(id.Scheme)
	h = 37*h + javaStringHash(id.ID)
	spread := (h ^ h>>16) & 0x7fffffff
	return spread & (n - 1)
}

// javaStringHash is Java's String.hashCode, over UTF-16 code units.
func javaStringHash(s string) uint32 {
	var h uint32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + uint32(u)
	}
	return h
}

// authIDs returns a copy of the connection's identities.
func (c *conn) authIDs() []jute.ID {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	return append([]jute.ID(nil), c.ids...)
}

// addIDs adds identities, keeping them a set.
func (c *conn) addIDs(ids []jute.ID) {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	for _, id := range ids {
		dup := false
		for _, have := range c.ids {
			if have == id {
				dup = true
				break
			}
		}
		if !dup {
			c.ids = append(c.ids, id)
		}
	}
}
