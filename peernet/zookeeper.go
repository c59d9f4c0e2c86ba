package peernet

import (
	"fmt"
	"log/slog"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/sasl"
)

// NewForZooKeeper builds the network for connections to Apache ZooKeeper
// members (zkserverd mirror): TLS exactly as New sets it up from
// sslQuorum, portUnification and the ssl.quorum.* keys, with nothing
// after the TLS handshake, since ZooKeeper members send no hello. Its
// quorum SASL login is ZooKeeper's own exchange (QuorumAuthPacket),
// which the caller runs on the connection with LoadQuorumLogin's
// mechanisms; New's login is not used.
func NewForZooKeeper(cfg conf.Config, logger *slog.Logger) (*Network, error) {
	cfg.Quorum.SASL.Enable = false
	n, err := New(cfg, logger)
	if err != nil {
		return nil, err
	}
	n.bare = true
	return n, nil
}

// QuorumLogin is a member's quorum SASL setup (the quorum.auth.* keys and
// the DIGEST-MD5 credentials of its JAAS sections), for a caller that
// runs Apache ZooKeeper's login exchange itself.
type QuorumLogin struct {
	// LearnerRequire is quorum.auth.learnerRequireSasl: log in on every
	// connection this member opens.
	LearnerRequire bool
	// ServerRequire is quorum.auth.serverRequireSasl: refuse a member
	// that does not log in, or fails to.
	ServerRequire bool
	// User is the QuorumLearner section's username.
	User string

	l *login
}

// LoadQuorumLogin reads the QuorumServer and QuorumLearner sections (as
// named by quorum.auth.*.saslLoginContext) of cfg's JAAS file, with the
// checks New makes. It returns nil when quorum.auth.enableSasl is false.
func LoadQuorumLogin(cfg conf.Config) (*QuorumLogin, error) {
	if !cfg.Quorum.SASL.Enable {
		return nil, nil
	}
	l, err := loadLogin(cfg)
	if err != nil {
		return nil, err
	}
	return &QuorumLogin{LearnerRequire: l.learnerRequire, ServerRequire: l.serverRequire, User: l.user, l: l}, nil
}

// NewLearner starts a DIGEST-MD5 login with the QuorumLearner
// credentials, under ZooKeeper's quorum names (protocol
// zookeeper-quorum, server name zk-quorum-sasl-md5).
func (q *QuorumLogin) NewLearner() *sasl.DigestMD5Client {
	return sasl.NewDigestMD5Client(q.l.user, q.l.password, quorumProtocol)
}

// NewServer starts checking a member's DIGEST-MD5 login against the
// QuorumServer users.
func (q *QuorumLogin) NewServer() *sasl.DigestMD5Server {
	return sasl.NewDigestMD5ServerFor(q.l.users, quorumProtocol, quorumRealm)
}

// String names the setup for logs.
func (q *QuorumLogin) String() string {
	return fmt.Sprintf("quorum SASL as %q (learnerRequireSasl=%t, serverRequireSasl=%t)", q.User, q.LearnerRequire, q.ServerRequire)
}
