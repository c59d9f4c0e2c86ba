package peernet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/zkserverd/zkserverd/sasl"
)

// The handshake after TLS. A dialing member that uses TLS or logs in
// sends a hello: helloMagic, then a mode byte. The magic byte is neither a
// TLS record (0x16), nor a raft message type (0-4), nor the first byte of
// a forwarding frame (a big-endian length, 0x00), so an accepting member
// tells a hello from a plain member's first message by it.
//
// With modeDigest the dialer then logs in: it sends length-prefixed
// tokens and the acceptor answers each with a status byte and a
// length-prefixed body: statusContinue with its next token, statusAccepted
// with its last token (rspauth), or statusRefused with the reason in text.
// Then the acceptor sends one byte: 1 when it logs in too (the same
// exchange with the roles swapped), 0 when it does not, after which the
// dialer sends a final status (refused if it requires a login). modeNone
// gets statusAccepted or statusRefused at once. Lengths are 4 bytes, big
// endian.
//
// Logins go both ways because raft's links are not ZooKeeper's: a leader
// dials its followers, so a member must prove itself whichever side dials,
// or a member with a wrong QuorumLearner password would still be
// replicated to by the leader.
const (
	helloMagic = 0xa7

	modeNone   = 0
	modeDigest = 1

	statusContinue = 0
	statusAccepted = 1
	statusRefused  = 2

	// maxToken bounds one handshake token or reason.
	maxToken = 64 << 10
	// maxRounds bounds the tokens of one login (DIGEST-MD5 needs two).
	maxRounds = 5
)

// The names ZooKeeper's quorum DIGEST-MD5 login uses: protocol
// zookeeper-quorum, server name (and realm) zk-quorum-sasl-md5.
const (
	quorumProtocol = "zookeeper-quorum"
	quorumRealm    = "zk-quorum-sasl-md5"
)

// sendHello runs the dialing side of the handshake: the hello, the login
// when authenticate is set, and the acceptor's verdict.
func (n *Network) sendHello(c net.Conn, authenticate bool) error {
	mode := byte(modeNone)
	if authenticate {
		mode = modeDigest
	}
	if _, err := c.Write([]byte{helloMagic, mode}); err != nil {
		return fmt.Errorf("send hello: %w", err)
	}
	if !authenticate {
		status, body, err := readStatus(c)
		if err != nil {
			return err
		}
		return verdict(status, body)
	}
	if err := n.loginAsLearner(c); err != nil {
		return err
	}
	return n.checkReverseLogin(c)
}

// checkReverseLogin runs the dialer's side of the acceptor's login.
func (n *Network) checkReverseLogin(c net.Conn) error {
	var reverse [1]byte
	if _, err := io.ReadFull(c, reverse[:]); err != nil {
		return fmt.Errorf("read the member's login offer: %w", err)
	}
	if reverse[0] == 1 {
		_, err := n.loginOfLearner(c)
		return err
	}
	if n.login.serverRequire {
		return refuse(c, "the member did not log in and quorum.auth.serverRequireSasl=true")
	}
	return writeStatus(c, statusAccepted, nil)
}

// reverseLogin runs the acceptor's side of its own login, after the
// dialer's succeeded.
func (n *Network) reverseLogin(c net.Conn) error {
	if !n.login.learnerRequire {
		if _, err := c.Write([]byte{0}); err != nil {
			return fmt.Errorf("send login offer: %w", err)
		}
		status, body, err := readStatus(c)
		if err != nil {
			return err
		}
		return verdict(status, body)
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return fmt.Errorf("send login offer: %w", err)
	}
	return n.loginAsLearner(c)
}

// loginAsLearner runs DIGEST-MD5 with the QuorumLearner credentials.
func (n *Network) loginAsLearner(c net.Conn) error {
	client := sasl.NewDigestMD5Client(n.login.user, n.login.password, quorumProtocol)
	token := []byte{}
	for range maxRounds {
		if err := writeToken(c, token); err != nil {
			return err
		}
		status, body, err := readStatus(c)
		if err != nil {
			return err
		}
		if status != statusContinue && status != statusAccepted {
			return verdict(status, body)
		}
		if token, err = client.Evaluate(body); err != nil {
			return fmt.Errorf("%w: login as %q: %w", ErrRefused, n.login.user, err)
		}
		if status == statusAccepted {
			if !client.Complete() {
				return fmt.Errorf("%w: login as %q: accepted before the exchange completed", ErrRefused, n.login.user)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: login as %q: more than %d rounds", ErrRefused, n.login.user, maxRounds)
}

// verdict turns an acceptor's final status into an error (nil: accepted).
func verdict(status byte, body []byte) error {
	switch status {
	case statusAccepted:
		return nil
	case statusRefused:
		return fmt.Errorf("%w by the member: %s", ErrRefused, body)
	}
	return fmt.Errorf("%w: unexpected handshake status %d", ErrRefused, status)
}

// serveHello runs the accepting side after the hello's magic byte was
// seen (and consumed): it reads the mode and, for a login, checks it
// against the QuorumServer users. It returns the authenticated user ("":
// none) or the reason to refuse, which it has sent to the member.
func (n *Network) serveHello(c net.Conn) (string, error) {
	var mode [1]byte
	if _, err := io.ReadFull(c, mode[:]); err != nil {
		return "", fmt.Errorf("read hello: %w", err)
	}
	switch {
	case mode[0] == modeNone && n.login != nil && n.login.serverRequire:
		return "", refuse(c, "the member did not log in and quorum.auth.serverRequireSasl=true")
	case mode[0] == modeNone:
		return "", writeStatus(c, statusAccepted, nil)
	case mode[0] != modeDigest:
		return "", refuse(c, fmt.Sprintf("unknown handshake mode %d", mode[0]))
	case n.login == nil:
		return "", refuse(c, "the member logs in but quorum.auth.enableSasl is false here")
	}
	user, err := n.loginOfLearner(c)
	if err != nil {
		return "", err
	}
	return user, n.reverseLogin(c)
}

// loginOfLearner checks a member's DIGEST-MD5 login.
func (n *Network) loginOfLearner(c net.Conn) (string, error) {
	server := sasl.NewDigestMD5ServerFor(n.login.users, quorumProtocol, quorumRealm)
	for range maxRounds {
		token, err := readToken(c)
		if err != nil {
			return "", err
		}
		out, err := server.Evaluate(token)
		if err != nil {
			refuse(c, "login failed")
			return "", fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if server.Complete() {
			return server.AuthenticationID(), writeStatus(c, statusAccepted, out)
		}
		if err := writeStatus(c, statusContinue, out); err != nil {
			return "", err
		}
	}
	return "", refuse(c, "login takes too many rounds")
}

// refuse tells the member why it is refused and returns that reason as
// an error.
func refuse(c net.Conn, reason string) error {
	writeStatus(c, statusRefused, []byte(reason))
	return fmt.Errorf("%w: %s", ErrRefused, reason)
}

func writeToken(w io.Writer, token []byte) error {
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(token)), uint32(len(token)))
	if _, err := w.Write(append(buf, token...)); err != nil {
		return fmt.Errorf("send login token: %w", err)
	}
	return nil
}

func readToken(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("read login token: %w", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxToken {
		return nil, fmt.Errorf("%w: login token of %d bytes", ErrRefused, size)
	}
	token := make([]byte, size)
	if _, err := io.ReadFull(r, token); err != nil {
		return nil, fmt.Errorf("read login token: %w", err)
	}
	return token, nil
}

func writeStatus(w io.Writer, status byte, body []byte) error {
	buf := append([]byte{status}, binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
	if _, err := w.Write(append(buf, body...)); err != nil {
		return fmt.Errorf("send handshake status: %w", err)
	}
	return nil
}

func readStatus(r io.Reader) (byte, []byte, error) {
	var status [1]byte
	if _, err := io.ReadFull(r, status[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, fmt.Errorf("%w: the member closed the connection during the handshake", ErrRefused)
		}
		return 0, nil, fmt.Errorf("read handshake status: %w", err)
	}
	body, err := readToken(r)
	return status[0], body, err
}
