package zab

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/zkserverd/zkserverd/jute"
)

// Network opens the observer's connections: to the leader's quorum port
// and to the voters' election ports (Dial), and its own election port
// (Listen). An ensemble with quorum TLS (sslQuorum) needs one that runs
// the TLS handshake, and nothing else, before handing a connection over;
// nil in Config means plain TCP.
type Network interface {
	Dial(addr string, timeout time.Duration) (net.Conn, error)
	Listen(addr string) (net.Listener, error)
}

// tcpNetwork is plain TCP.
type tcpNetwork struct{}

func (tcpNetwork) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

func (tcpNetwork) Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// SASLClient is one client side of a SASL exchange (DIGEST-MD5):
// Evaluate answers each server token, Complete reports that the server
// proved itself.
type SASLClient interface {
	Evaluate(token []byte) ([]byte, error)
	Complete() bool
}

// SASLServer is one server side of a SASL exchange.
type SASLServer interface {
	Evaluate(token []byte) ([]byte, error)
	Complete() bool
	AuthenticationID() string
}

// QuorumAuth is ZooKeeper's quorum SASL (the quorum.auth.* keys with
// quorum.auth.enableSasl=true), run as its SaslQuorumAuthLearner and
// SaslQuorumAuthServer do: QuorumAuthPackets (long magic, int status,
// buffer token) exchanged by the member that opened the connection
// (the learner) and the one that accepted it. The learner logs in at
// the start of its leader connection and after the opening of each
// election connection it opens; a voter that opens an election
// connection to the observer logs in to it the same way.
type QuorumAuth struct {
	// Learner starts the observer's login; set it when
	// quorum.auth.learnerRequireSasl=true (nil: the observer does not log
	// in, as a ZooKeeper learner without that key).
	Learner func() SASLClient
	// Server starts checking a voter's login on an election connection
	// the voter opened. Required.
	Server func() SASLServer
	// ServerRequire is quorum.auth.serverRequireSasl: a voter that does
	// not log in, or fails to, is refused; otherwise it is let through.
	ServerRequire bool
}

// quorumAuthMagic is QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER as it goes on
// the wire (Java's -0xa0dbcafecafe1234L, whose hex literal is already
// negative, so the value is positive).
const quorumAuthMagic int64 = 0x5f2435013501edcc

// The status of a QuorumAuthPacket.
const (
	authInProgress int32 = 0
	authSuccess    int32 = 1
	authError      int32 = -1
)

// Bounds of a login: ZooKeeper's server allows a few rounds (DIGEST-MD5
// takes two) and its tokens are small.
const (
	maxAuthRounds = 5
	maxAuthToken  = 64 << 10
)

// ErrAuth marks a quorum SASL login that failed, on either side.
var ErrAuth = errors.New("zab: quorum SASL login failed")

// authPacket is one QuorumAuthPacket.
type authPacket struct {
	magic  int64
	status int32
	token  []byte
}

func writeAuthPacket(w io.Writer, status int32, token []byte) error {
	var e jute.Encoder
	e.Long(quorumAuthMagic)
	e.Int(status)
	e.Buffer(token)
	if _, err := w.Write(e.Bytes()); err != nil {
		return fmt.Errorf("zab: send login packet: %w", err)
	}
	return nil
}

func readAuthPacket(r *bufio.Reader) (authPacket, error) {
	b, err := peek(r, 12)
	if err != nil {
		return authPacket{}, fmt.Errorf("zab: read login packet: %w", noEOF(err))
	}
	p := authPacket{magic: int64(binary.BigEndian.Uint64(b[:8])), status: int32(binary.BigEndian.Uint32(b[8:12]))}
	r.Discard(12)
	if p.magic != quorumAuthMagic {
		return p, fmt.Errorf("%w: the peer answered with something other than a login packet (is quorum.auth.enableSasl the same on both sides?)", ErrAuth)
	}
	if p.token, err = readBuffer(r, maxAuthToken); err != nil {
		return p, fmt.Errorf("zab: read login packet: %w", err)
	}
	return p, nil
}

// nextIsAuth reports whether the next bytes on r are a login packet,
// without consuming them.
func nextIsAuth(r *bufio.Reader) (bool, error) {
	b, err := peek(r, 8)
	if err != nil {
		return false, noEOF(err)
	}
	return int64(binary.BigEndian.Uint64(b)) == quorumAuthMagic, nil
}

// login runs the learner's side on a connection the observer opened to
// peer (a sid and address, for errors), as SaslQuorumAuthLearner does: an
// empty first token (DIGEST-MD5 has no initial response), then one
// answer per IN_PROGRESS challenge, until SUCCESS brings the last token,
// which must complete the exchange. It does nothing when a.Learner is
// nil.
func (a *QuorumAuth) login(w io.Writer, r *bufio.Reader, peer string) error {
	if a == nil || a.Learner == nil {
		return nil
	}
	client := a.Learner()
	if err := writeAuthPacket(w, authInProgress, []byte{}); err != nil {
		return err
	}
	for range maxAuthRounds {
		p, err := readAuthPacket(r)
		if err != nil {
			return fmt.Errorf("login to %s: %w", peer, err)
		}
		switch p.status {
		case authError:
			return fmt.Errorf("%w: %s refused the login (check the QuorumLearner section's username and password against the voters' QuorumServer section)", ErrAuth, peer)
		case authSuccess:
			if _, err := client.Evaluate(p.token); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrAuth, peer, err)
			}
			if !client.Complete() {
				return fmt.Errorf("%w: %s reported success before the exchange completed", ErrAuth, peer)
			}
			return nil
		case authInProgress:
			out, err := client.Evaluate(p.token)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrAuth, peer, err)
			}
			if err := writeAuthPacket(w, authInProgress, out); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: %s sent login status %d", ErrAuth, peer, p.status)
		}
	}
	return fmt.Errorf("%w: %s: more than %d rounds", ErrAuth, peer, maxAuthRounds)
}

// voterLoginWait is how long an election connection a voter opened may
// stay silent after its opening before the voter counts as not logging
// in. A voter that logs in sends its first packet right after the
// opening; one that does not (ZooKeeper before 3.8.5 and 3.9.4 never logs
// in to an observer, ZOOKEEPER-4886) sends nothing until it is sent a
// notification, which would deadlock a wait without a bound.
const voterLoginWait = time.Second

// check runs the server's side on an election connection a voter opened,
// after its opening, as SaslQuorumAuthServer does. A voter that sends no
// login packet is let through unless ServerRequire; so is one whose login
// fails (after an ERROR status). It returns the authenticated user ("":
// none) or why the connection must close. It leaves c's deadline unset;
// the caller sets its own again.
func (a *QuorumAuth) check(c net.Conn, r *bufio.Reader, peer string) (string, error) {
	if a == nil {
		return "", nil
	}
	c.SetReadDeadline(time.Now().Add(voterLoginWait))
	isAuth, err := nextIsAuth(r)
	c.SetReadDeadline(time.Time{})
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		isAuth, err = false, nil
	}
	if err != nil {
		return "", fmt.Errorf("zab: read from %s: %w", peer, err)
	}
	if !isAuth {
		if a.ServerRequire {
			return "", fmt.Errorf("%w: %s did not log in and quorum.auth.serverRequireSasl=true "+
				"(ZooKeeper before 3.8.5 and 3.9.4 does not log in to an observer whose myid is smaller than its own, "+
				"ZOOKEEPER-4886: give the mirror a myid larger than every voter's)", ErrAuth, peer)
		}
		return "", nil
	}
	user, err := a.serve(c, r)
	switch {
	case err == nil:
		return user, nil
	case errors.Is(err, ErrAuth) && !a.ServerRequire:
		return "", nil // ZooKeeper lets it through; the voter gives up itself
	}
	return "", fmt.Errorf("login of %s: %w", peer, err)
}

// serve runs the rounds of one login to its end.
func (a *QuorumAuth) serve(w io.Writer, r *bufio.Reader) (string, error) {
	server := a.Server()
	p, err := readAuthPacket(r)
	if err != nil {
		return "", err
	}
	for range maxAuthRounds {
		out, err := server.Evaluate(p.token)
		if err != nil {
			writeAuthPacket(w, authError, []byte{})
			return "", fmt.Errorf("%w: %w", ErrAuth, err)
		}
		if server.Complete() {
			return server.AuthenticationID(), writeAuthPacket(w, authSuccess, out)
		}
		if err := writeAuthPacket(w, authInProgress, out); err != nil {
			return "", err
		}
		if p, err = readAuthPacket(r); err != nil {
			return "", err
		}
	}
	writeAuthPacket(w, authError, []byte{})
	return "", fmt.Errorf("%w: more than %d rounds", ErrAuth, maxAuthRounds)
}
