package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/internal/zkproc"
	"github.com/zkserverd/zkserverd/test/ports"
	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// securedEnsemble is a ZooKeeper ensemble of voters 3-5 whose
// configuration lists mirrors 1, 2, 6 and 7 as observers, launched with
// extra zoo.cfg lines and JVM flags. Mirrors 1 and 2 have smaller sids
// than the voters: the voters drop the election connections they open and
// open their own to them, as ZooKeeper's QuorumCnxManager does, so their
// election port is exercised (TLS server side, the voters' logins);
// mirrors 6 and 7 keep the ones they open.
type securedEnsemble struct {
	zk      *zkproc.Ensemble
	picker  *ports.Picker
	dir     string
	created int // nodes the test created
}

func launchSecured(t *testing.T, ctx context.Context, extra, jvm []string, member func(id int64) []string) *securedEnsemble {
	t.Helper()
	picker := ports.ForCmd()
	e, err := zkproc.Launch(ctx, zkproc.Spec{Dir: t.TempDir(), Voters: []int64{3, 4, 5}, Outside: []int64{1, 2, 6, 7},
		Ports: zkprocPorts{picker}, ExtraConfig: extra, MemberConfig: member, JVMProps: jvm})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		if t.Failed() {
			for _, m := range e.Members() {
				if b, err := os.ReadFile(m.Log()); err == nil {
					t.Logf("ZooKeeper %d's log ends with:\n%s", m.ID, tail(string(b), 40))
				}
			}
		}
	})
	return &securedEnsemble{zk: e, picker: picker, dir: t.TempDir()}
}

// tail returns the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(text, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// mirrorConfig writes the zoo.cfg the mirror reads: the ensemble's
// server lines and the lines given (the mirror host's own keys).
func (s *securedEnsemble) mirrorConfig(t *testing.T, name string, lines []string) string {
	t.Helper()
	var cfg strings.Builder
	for id, line := range s.zk.ServerLines() {
		fmt.Fprintf(&cfg, "server.%d=%s\n", id, line)
	}
	cfg.WriteString(strings.Join(lines, "\n") + "\n")
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runningMirror is a `zkserverd mirror` run in the test's process.
type runningMirror struct {
	status string
	log    *testutil.LogCapture
	stop   func()
}

// startMirror runs `zkserverd mirror` as sid myid on cfgPath, with the
// extra flags given, until the test ends; it must then stop without error.
func (s *securedEnsemble) startMirror(t *testing.T, ctx context.Context, cfgPath string, myid int64, flags ...string) *runningMirror {
	t.Helper()
	m := &runningMirror{status: "127.0.0.1:" + strconv.Itoa(s.picker.Free(t)), log: &testutil.LogCapture{}}
	root := newRootCommand(&bytes.Buffer{}, m.log)
	root.SetArgs(append([]string{"mirror", "--ensemble", cfgPath, "--myid", strconv.FormatInt(myid, 10), "--status-addr", m.status}, flags...))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(runCtx) }()
	var once sync.Once
	m.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("mirror %d returned %v on stop; log:\n%s", myid, err, m.log.String())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("mirror %d did not stop within 30 s", myid)
			}
		})
	}
	t.Cleanup(m.stop)
	return m
}

// expectFollows writes ten nodes through ZooKeeper and waits until the
// mirror is synced at the last write's zxid with every node.
func (s *securedEnsemble) expectFollows(t *testing.T, m *runningMirror) {
	t.Helper()
	conn, _, err := zk.Connect(s.zk.ClientAddrs(), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var last int64
	for range 10 {
		s.created++
		path := fmt.Sprintf("/s%d", s.created)
		if _, err := conn.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		_, st, err := conn.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		last = st.Mzxid
	}
	var st mirrorStatus
	deadline := time.Now().Add(60 * time.Second)
	for {
		st = getMirrorStatus(t, m.status)
		if st.Synced && st.LastZxid == fmt.Sprintf("%#x", last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror did not reach 0x%x within 60 s: status %+v; log:\n%s", last, st, m.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// /, /zookeeper, /zookeeper/config, /zookeeper/quota and the nodes.
	if want := 4 + s.created; st.Znodes != want || st.Error != "" {
		t.Fatalf("status %+v, want %d znodes and no error", st, want)
	}
}

// expectRefused checks that the mirror does not sync and that its log
// says why, within 30 s.
func expectRefused(t *testing.T, m *runningMirror, why string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, "the mirror's log line "+why, func() bool {
		return strings.Contains(m.log.String(), why)
	})
	if st := getMirrorStatus(t, m.status); st.Synced || st.Leader != 0 {
		t.Fatalf("a refused mirror reports %+v", st)
	}
}

// TestMirrorWithQuorumTLS runs ZooKeeper's voters with sslQuorum=true
// (each voter with a PKCS12 keystore of its own from a test CA) and a
// mirror with a certificate of its own from that CA: it syncs and follows
// writes. A second mirror,
// whose certificate another CA issued, is refused by the voters and logs
// the TLS failure.
func TestMirrorWithQuorumTLS(t *testing.T) {
	zkproc.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pki := t.TempDir()
	ca, stranger := tlstest.NewCA(t, "quorum CA"), tlstest.NewCA(t, "stranger CA")
	trust := tlstest.WriteFile(t, pki, "trust.p12", tlstest.PKCS12TrustStore(t, "pw", ca))
	common := []string{"sslQuorum=true", "ssl.quorum.trustStore.location=" + trust,
		"ssl.quorum.trustStore.password=pw", "ssl.quorum.trustStore.type=PKCS12"}
	// keystore writes the keystore of a certificate issuer gave name and
	// returns the lines that name it.
	keystore := func(issuer *tlstest.Cert, name string) []string {
		cert := issuer.Issue(t, pkix.Name{CommonName: name}, tlstest.Options{})
		path := tlstest.WriteFile(t, pki, name+".p12", cert.PKCS12KeyStore(t, "pw"))
		return []string{"ssl.quorum.keyStore.location=" + path, "ssl.quorum.keyStore.password=pw", "ssl.quorum.keyStore.type=PKCS12"}
	}
	tlsLines := func(issuer *tlstest.Cert, name string) []string {
		return append(slices.Clone(common), keystore(issuer, name)...)
	}
	s := launchSecured(t, ctx, common, nil, func(id int64) []string { return keystore(ca, "zk"+strconv.FormatInt(id, 10)) })

	good := s.startMirror(t, ctx, s.mirrorConfig(t, "good.cfg", tlsLines(ca, "mirror1")), 1)
	s.expectFollows(t, good)
	if !strings.Contains(good.log.String(), "member links secured") {
		t.Errorf("the mirror did not log its quorum TLS setup; log:\n%s", good.log.String())
	}

	bad := s.startMirror(t, ctx, s.mirrorConfig(t, "bad.cfg", tlsLines(stranger, "intruder6")), 6)
	expectRefused(t, bad, "TLS handshake")
}

// TestMirrorWithQuorumSASL runs ZooKeeper's voters with quorum SASL
// (DIGEST-MD5, learner and server login required) and a mirror whose JAAS
// file, named by -Djava.security.auth.login.config in SERVER_JVMFLAGS as
// for a member, holds the same credentials: it syncs, follows writes and
// serves clients. A mirror with a wrong QuorumLearner password is refused, and logs it.
// With ZooKeeper before 3.8.5, a mirror whose myid is smaller than the
// voters' and that requires their login is refused as ZooKeeper's own
// observer is (ZOOKEEPER-4886), and logs why; without
// quorum.auth.serverRequireSasl it follows.
func TestMirrorWithQuorumSASL(t *testing.T) {
	zkproc.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	saslLines := []string{"quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true"}
	jaas := testutil.WriteQuorumJAAS(t, t.TempDir(), "secret", "secret")
	s := launchSecured(t, ctx, saslLines, []string{"-Djava.security.auth.login.config=" + jaas}, nil)

	t.Setenv("SERVER_JVMFLAGS", "-Djava.security.auth.login.config="+jaas)
	// This one also serves clients (--client-addr), through the same
	// connections.
	clientAddr := "127.0.0.1:" + strconv.Itoa(s.picker.Free(t))
	good := s.startMirror(t, ctx, s.mirrorConfig(t, "good.cfg", saslLines), 6, "--client-addr", clientAddr)
	s.expectFollows(t, good)
	conn, _, err := zk.Connect([]string{clientAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if data, _, err := conn.Get("/s1"); err != nil || string(data) != "/s1" {
		t.Fatalf("read through the mirror: %q, %v", data, err)
	}

	wrong := testutil.WriteQuorumJAAS(t, t.TempDir(), "secret", "wrong")
	bad := s.startMirror(t, ctx, s.mirrorConfig(t, "bad.cfg", append(saslLines, "java.security.auth.login.config="+wrong)), 7)
	expectRefused(t, bad, "refused the login")

	if !zooKeeperBefore(t, s.zk.ClientAddrs()[0], 3, 8, 5) {
		return
	}
	low := s.startMirror(t, ctx, s.mirrorConfig(t, "low.cfg", saslLines), 1)
	expectRefused(t, low, "ZOOKEEPER-4886")
	// Without quorum.auth.serverRequireSasl the mirror lets those voters
	// in after voterLoginWait and follows.
	lenient := s.startMirror(t, ctx, s.mirrorConfig(t, "lenient.cfg", saslLines[:2]), 2)
	s.expectFollows(t, lenient)
}

// zooKeeperBefore reports whether the ZooKeeper serving addr is older
// than major.minor.patch (srvr's "Zookeeper version: 3.8.0-...").
func zooKeeperBefore(t *testing.T, addr string, major, minor, patch int) bool {
	t.Helper()
	line := testutil.FourLetterLine(addr, "srvr", "Zookeeper version: ")
	var v [3]int
	if _, err := fmt.Sscanf(line, "%d.%d.%d", &v[0], &v[1], &v[2]); err != nil {
		t.Fatalf("ZooKeeper version %q: %v", line, err)
	}
	return v[0] < major || v[0] == major && (v[1] < minor || v[1] == minor && v[2] < patch)
}

func TestMirrorSecurityOfConfig(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "quorum CA")
	keystore := tlstest.WriteFile(t, dir, "m.p12", ca.Issue(t, pkix.Name{CommonName: "m"}, tlstest.Options{}).PKCS12KeyStore(t, "pw"))
	jaas := testutil.WriteQuorumJAAS(t, dir, "s", "l")
	tests := []struct {
		name                  string
		text                  string
		network, auth, learns bool
		wantErr               string
	}{
		{name: "plain", text: "tickTime=2000\n"},
		{name: "TLS", text: "sslQuorum=true\nssl.quorum.keyStore.location=" + keystore + "\nssl.quorum.keyStore.password=pw\n", network: true},
		{name: "TLS as JVM flags", text: "zookeeper.sslQuorum=true\nzookeeper.ssl.quorum.keyStore.location=" + keystore + "\nzookeeper.ssl.quorum.keyStore.password=pw\n", network: true},
		{name: "TLS without a readable keystore", text: "sslQuorum=true\nssl.quorum.keyStore.location=/nonexistent.p12\n", wantErr: "quorum TLS"},
		{name: "SASL, learner logs in", text: "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\njava.security.auth.login.config=" + jaas + "\n",
			auth: true, learns: true},
		{name: "SASL, learner does not log in", text: "quorum.auth.enableSasl=true\njava.security.auth.login.config=" + jaas + "\n", auth: true},
		{name: "SASL without a JAAS file", text: "quorum.auth.enableSasl=true\n", wantErr: "needs a JAAS file"},
		{name: "SASL with another section name", text: "quorum.auth.enableSasl=true\nquorum.auth.learner.saslLoginContext=Other\njava.security.auth.login.config=" + jaas + "\n",
			wantErr: `no section "Other"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := conf.Parse(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			sec, err := mirrorSecurityFor(cfg, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (sec.network != nil) != tt.network || (sec.auth != nil) != tt.auth || (sec.auth != nil && sec.auth.Learner != nil) != tt.learns {
				t.Fatalf("security %+v: network %t, auth %t, learner login %t wanted", sec, tt.network, tt.auth, tt.learns)
			}
		})
	}
}
