package zab

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClient and fakeServer are a two-step mechanism shaped like
// DIGEST-MD5: an empty first token, a challenge, the client's proof of
// the password, and the server's proof back.
type fakeClient struct {
	password string
	step     int
}

func (c *fakeClient) Evaluate(token []byte) ([]byte, error) {
	switch {
	case c.step == 0 && string(token) == "challenge":
		c.step = 1
		return []byte(c.password), nil
	case c.step == 1 && string(token) == "proof":
		c.step = 2
		return nil, nil
	}
	return nil, fmt.Errorf("fake client: unexpected token %q at step %d", token, c.step)
}

func (c *fakeClient) Complete() bool { return c.step == 2 }

type fakeServer struct {
	password string
	step     int
}

func (s *fakeServer) Evaluate(token []byte) ([]byte, error) {
	switch {
	case s.step == 0 && len(token) == 0:
		s.step = 1
		return []byte("challenge"), nil
	case s.step == 1 && string(token) == s.password:
		s.step = 2
		return []byte("proof"), nil
	}
	return nil, errors.New("fake server: wrong password")
}

func (s *fakeServer) Complete() bool           { return s.step == 2 }
func (s *fakeServer) AuthenticationID() string { return "zkpeer" }

func fakeAuth(learnerPassword string, serverRequire bool) *QuorumAuth {
	a := &QuorumAuth{
		Server:        func() SASLServer { return &fakeServer{password: "right"} },
		ServerRequire: serverRequire,
	}
	if learnerPassword != "" {
		a.Learner = func() SASLClient { return &fakeClient{password: learnerPassword} }
	}
	return a
}

func TestQuorumAuthMagicIsJavas(t *testing.T) {
	// Java's literal -0xa0dbcafecafe1234L: the hex literal is a negative
	// long, negated.
	lit := uint64(0xa0dbcafecafe1234)
	if want := -int64(lit); quorumAuthMagic != want {
		t.Fatalf("magic %#x, want %#x", quorumAuthMagic, want)
	}
	var buf bytes.Buffer
	if err := writeAuthPacket(&buf, authSuccess, []byte("ab")); err != nil {
		t.Fatal(err)
	}
	want := binary.BigEndian.AppendUint64(nil, uint64(quorumAuthMagic))
	want = append(want, 0, 0, 0, 1, 0, 0, 0, 2, 'a', 'b')
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("packet % x, want % x", buf.Bytes(), want)
	}
	p, err := readAuthPacket(bufio.NewReader(bytes.NewReader(append(want[:12:12], 0xff, 0xff, 0xff, 0xff))))
	if err != nil || p.status != authSuccess || p.token != nil {
		t.Fatalf("a null token reads as %+v, %v", p, err)
	}
}

func TestQuorumAuthExchange(t *testing.T) {
	notification := []byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'}
	tests := []struct {
		name string
		// learner is the password the learner logs in with ("": it does
		// not log in but sends a notification; "-": it sends nothing).
		learner       string
		serverRequire bool
		loginErr      string // "" = the login succeeds (or none is made)
		checkErr      string // "" = the connection is let through
		user          string
		minWait       time.Duration
	}{
		{name: "login", learner: "right", serverRequire: true, user: "zkpeer"},
		{name: "wrong password, required", learner: "wrong", serverRequire: true,
			loginErr: "refused the login", checkErr: "wrong password"},
		{name: "wrong password, not required", learner: "wrong", loginErr: "refused the login"},
		{name: "no login, required", serverRequire: true, checkErr: "did not log in"},
		{name: "no login, not required"},
		{name: "silent voter, required", learner: "-", serverRequire: true, checkErr: "ZOOKEEPER-4886", minWait: voterLoginWait},
		{name: "silent voter, not required", learner: "-", minWait: voterLoginWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			learnerSide, serverSide := net.Pipe()
			defer learnerSide.Close()
			defer serverSide.Close()
			learnerSide.SetDeadline(time.Now().Add(10 * time.Second))
			serverSide.SetDeadline(time.Now().Add(10 * time.Second))
			loginDone := make(chan error, 1)
			go func() {
				switch tt.learner {
				case "-":
					loginDone <- nil
				case "":
					_, err := learnerSide.Write(notification)
					loginDone <- err
				default:
					a := fakeAuth(tt.learner, false)
					loginDone <- a.login(learnerSide, bufio.NewReader(learnerSide), "voter 9")
				}
			}()
			start := time.Now()
			br := bufio.NewReader(serverSide)
			user, err := fakeAuth("", tt.serverRequire).check(serverSide, br, "voter 9")
			waited := time.Since(start)
			if tt.checkErr == "" && err != nil || tt.checkErr != "" && (err == nil || !strings.Contains(err.Error(), tt.checkErr)) {
				t.Fatalf("check: %v, want error %q", err, tt.checkErr)
			}
			if user != tt.user {
				t.Errorf("check user %q, want %q", user, tt.user)
			}
			if waited < tt.minWait || waited > tt.minWait+3*time.Second {
				t.Errorf("check took %v, want at least %v", waited, tt.minWait)
			}
			if tt.learner == "" && tt.checkErr == "" {
				// What the voter sent is left for the election reader.
				got := make([]byte, len(notification))
				if _, err := io.ReadFull(br, got); err != nil || !bytes.Equal(got, notification) {
					t.Errorf("after check the stream holds %q, %v; want the notification", got, err)
				}
			}
			serverSide.Close()
			err = <-loginDone
			if tt.loginErr == "" && err != nil || tt.loginErr != "" && (err == nil || !strings.Contains(err.Error(), tt.loginErr)) {
				t.Fatalf("login: %v, want error %q", err, tt.loginErr)
			}
			if tt.loginErr != "" && !errors.Is(err, ErrAuth) {
				t.Errorf("login error %v is not ErrAuth", err)
			}
		})
	}
}

func TestLoginToPeerWithoutSASL(t *testing.T) {
	learnerSide, voterSide := net.Pipe()
	defer learnerSide.Close()
	defer voterSide.Close()
	learnerSide.SetDeadline(time.Now().Add(5 * time.Second))
	go func() {
		// A voter without quorum SASL reads the login packet as an
		// election message and answers with one of its own.
		io.ReadFull(voterSide, make([]byte, 16))
		voterSide.Write([]byte{0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	}()
	err := fakeAuth("right", false).login(learnerSide, bufio.NewReader(learnerSide), "voter 2")
	if err == nil || !strings.Contains(err.Error(), "quorum.auth.enableSasl") {
		t.Fatalf("login to a voter without SASL: %v, want an error naming quorum.auth.enableSasl", err)
	}
}

// FuzzQuorumAuthCheck feeds the observer's side of a voter's login
// whatever a peer may send: the check ends (no panic, no hang), and lets
// a peer in as a user only if it sent the right password.
func FuzzQuorumAuthCheck(f *testing.F) {
	var login bytes.Buffer
	writeAuthPacket(&login, authInProgress, []byte{})
	writeAuthPacket(&login, authInProgress, []byte("right"))
	f.Add(login.Bytes())
	f.Add(login.Bytes()[:20])
	f.Add([]byte{0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o'})
	f.Add(binary.BigEndian.AppendUint64(nil, uint64(quorumAuthMagic)))
	f.Fuzz(func(t *testing.T, data []byte) {
		peer, observer := net.Pipe()
		defer observer.Close()
		observer.SetDeadline(time.Now().Add(5 * time.Second))
		go io.Copy(io.Discard, peer)
		go func() {
			peer.Write(data)
			peer.Close()
		}()
		user, _ := fakeAuth("", true).check(observer, bufio.NewReader(observer), "voter 9")
		if user != "" && !bytes.Contains(data, []byte("right")) {
			t.Fatalf("input %q logged in as %q", data, user)
		}
	})
}

// countingNetwork is plain TCP that records the addresses it dials and
// listens on. mu guards dials and listens.
type countingNetwork struct {
	mu             sync.Mutex
	dials, listens []string
}

func (n *countingNetwork) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	n.mu.Lock()
	n.dials = append(n.dials, addr)
	n.mu.Unlock()
	return tcpNetwork{}.Dial(addr, timeout)
}

func (n *countingNetwork) Listen(addr string) (net.Listener, error) {
	n.mu.Lock()
	n.listens = append(n.listens, addr)
	n.mu.Unlock()
	return tcpNetwork{}.Listen(addr)
}

// TestConfigNetworkOpensEveryConnection: the election listener, the
// election connections and the leader connection all go through
// Config.Network (where quorum TLS is run).
func TestConfigNetworkOpensEveryConnection(t *testing.T) {
	e := newTestEnsemble(t, 1, 5)
	n := &countingNetwork{}
	e.cfg.Network = n
	e.start(t, newRecorder())
	e.leader.next(t).register(1, 2)
	voter, _ := View{Servers: e.cfg.Servers}.Server(5)
	me, _ := View{Servers: e.cfg.Servers}.Server(1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Equal(n.listens, []string{me.ElectionAddr}) {
		t.Errorf("listened on %v, want the observer's election address %s", n.listens, me.ElectionAddr)
	}
	if !slices.Contains(n.dials, voter.ElectionAddr) || !slices.Contains(n.dials, voter.Addr) {
		t.Errorf("dialled %v, want the voter's election address %s and its quorum address %s", n.dials, voter.ElectionAddr, voter.Addr)
	}
}
