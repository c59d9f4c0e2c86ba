package test

import (
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/ops"
	"github.com/zkserverd/zkserverd/tlsconf/tlstest"
)

// quorumPKI is a quorum CA and the files of member keystores it issued.
type quorumPKI struct {
	dir   string
	ca    *tlstest.Cert
	trust string // the PEM truststore holding ca
}

func newQuorumPKI(t *testing.T) *quorumPKI {
	p := &quorumPKI{dir: t.TempDir(), ca: tlstest.NewCA(t, "quorum CA")}
	p.trust = tlstest.WriteFile(t, p.dir, "quorum-ca.pem", tlstest.PEMTrustStore(p.ca))
	return p
}

// useTLS gives member cfg a keystore issued by issuer (the quorum CA when
// nil) and the quorum truststore, and sets sslQuorum and portUnification.
func (p *quorumPKI) useTLS(t *testing.T, cfg *conf.Config, issuer *tlstest.Cert, ssl, unified bool) {
	if issuer == nil {
		issuer = p.ca
	}
	name := "member" + strconv.FormatInt(cfg.MyID, 10) + "-" + issuer.Cert.Subject.CommonName + ".p12"
	cert := issuer.Issue(t, pkix.Name{CommonName: "zk" + strconv.FormatInt(cfg.MyID, 10)}, tlstest.Options{})
	q := &cfg.Quorum
	q.SSL, q.PortUnification = ssl, unified
	q.TLS.KeyStore = conf.Store{Location: tlstest.WriteFile(t, p.dir, name, cert.PKCS12KeyStore(t, "pw")), Password: "pw"}
	q.TLS.TrustStore = conf.Store{Location: p.trust}
}

// securedEnsemble is a three-member ensemble whose members' logs are
// kept, for the refusals between members.
type securedEnsemble struct {
	*ensemble
	t    *testing.T
	logs []*testutil.LogCapture // member i's log since it last started
}

// newSecuredEnsemble configures three members, each edited by configure,
// and starts none.
func newSecuredEnsemble(t *testing.T, configure func(i int, cfg *conf.Config)) *securedEnsemble {
	e := &securedEnsemble{t: t, logs: make([]*testutil.LogCapture, 3)}
	spec := ensembleSpec(t, 3)
	spec.New = func(i int, cfg conf.Config) (*member, error) {
		o := ops.New(ops.Options{})
		logger, capture := testutil.CaptureLogger(t, slog.LevelInfo)
		e.logs[i] = capture
		srv, err := server.New(server.Options{Config: cfg, Logger: logger, Operator: o})
		return &member{Server: srv, ops: o}, err
	}
	e.ensemble = testutil.NewEnsemble(t, spec)
	for i := range 3 {
		e.Edit(i, func(cfg *conf.Config) { configure(i, cfg) })
	}
	return e
}

// launch starts every member and waits until the first serving ones serve.
func (e *securedEnsemble) launch(serving int) {
	e.t.Helper()
	for i := range e.Size() {
		e.Start(i)
	}
	for i := range serving {
		e.WaitServing(i)
	}
}

// replicates writes a node through member from and checks that member to
// sees it after a sync.
func (e *securedEnsemble) replicates(from, to int, path string) {
	e.t.Helper()
	c, _ := testutil.Connect(e.t, e.Addr(from), 4*time.Second)
	defer c.Close()
	var err error
	testutil.Eventually(e.t, 10*time.Second, "a write through member "+strconv.Itoa(from+1), func() bool {
		_, err = c.Create(path, []byte(path), 0, zk.WorldACL(zk.PermAll))
		return err == nil || err == zk.ErrNodeExists
	})
	r, _ := testutil.Connect(e.t, e.Addr(to), 4*time.Second)
	defer r.Close()
	if _, err := r.Sync("/"); err != nil {
		e.t.Fatalf("sync on member %d: %v", to+1, err)
	}
	if data, _, err := r.Get(path); err != nil || string(data) != path {
		e.t.Fatalf("member %d reads %s = %q, %v", to+1, path, data, err)
	}
}

// restart stops member i and starts it with edit applied to its
// configuration.
func (e *securedEnsemble) restart(i int, edit func(*conf.Config)) {
	e.t.Helper()
	e.Stop(i)
	e.Edit(i, edit)
	e.Start(i)
	e.WaitServing(i)
}

// peerPortRefusesPlaintext checks that member i's quorum port closes a
// plaintext connection and logs why.
func (e *securedEnsemble) peerPortRefusesPlaintext(i int) {
	e.t.Helper()
	self, _ := e.Config(i).Self()
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(self.PeerPort)), 2*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte{0, 0, 0, 0})
	if _, err := c.Read(make([]byte, 1)); err == nil {
		e.t.Fatalf("member %d answered a plaintext connection on its quorum port", i+1)
	}
	testutil.Eventually(e.t, 5*time.Second, "the plaintext refusal log line", func() bool {
		return len(e.logs[i].Lines("refused a member connection", "TLS-only member port")) > 0
	})
}

// logged waits until one of the members logged a line with every part.
func (e *securedEnsemble) logged(what string, members []int, parts ...string) {
	e.t.Helper()
	testutil.Eventually(e.t, 10*time.Second, what, func() bool {
		for _, i := range members {
			if len(e.logs[i].Lines(parts...)) > 0 {
				return true
			}
		}
		return false
	})
}

func TestQuorumTLSReplicatesAndFailsOver(t *testing.T) {
	pki := newQuorumPKI(t)
	e := newSecuredEnsemble(t, func(i int, cfg *conf.Config) {
		pki.useTLS(t, cfg, nil, true, false)
	})
	e.launch(3)
	lead := e.Leader()
	e.replicates((lead+1)%3, (lead+2)%3, "/tls1")
	e.peerPortRefusesPlaintext(lead)
	e.Stop(lead)
	newLead := e.Leader()
	e.replicates(newLead, 3-lead-newLead, "/tls2")
	// Members that trust each other never refuse a certificate.
	for i := range e.logs {
		for _, reason := range []string{"not trusted", "bad certificate", "hostname verification"} {
			if lines := e.logs[i].Lines(reason); len(lines) > 0 {
				t.Errorf("member %d: %q", i+1, lines)
			}
		}
	}
}

func TestQuorumTLSRefusesUntrustedMember(t *testing.T) {
	pki := newQuorumPKI(t)
	stranger := tlstest.NewCA(t, "stranger CA")
	e := newSecuredEnsemble(t, func(i int, cfg *conf.Config) {
		var issuer *tlstest.Cert
		if i == 2 {
			issuer = stranger // trusts the quorum CA, but its own certificate is not
		}
		pki.useTLS(t, cfg, issuer, true, false)
		// A new ensemble one of whose members never answers starts
		// only when told to (docs/operations.md, "Seeding and growing").
		cfg.ForceNewEnsemble = true
	})
	e.launch(2)
	e.replicates(0, 1, "/trusted")
	// Both sides of each refused link say who and why.
	e.logged("a member refusing member 3's certificate", []int{0, 1}, "level=WARN", "CN=zk3", "not trusted", "certificate signed by unknown authority")
	e.logged("member 3 refusing the others' certificates", []int{2}, "level=WARN", "refused a member connection", "remote error: tls: bad certificate")
	e.logged("member 3 told its own connections are refused", []int{2}, "level=WARN", "could not connect to member", "remote error: tls: bad certificate")
	if mode := e.Mode(2); mode == "leader" || mode == "follower" {
		t.Fatalf("the untrusted member is a %s", mode)
	}
	e.replicates(1, 0, "/still-serving")
}

func TestQuorumTLSRollingUpgrade(t *testing.T) {
	pki := newQuorumPKI(t)
	// ZooKeeper's procedure, step 1 done: every member has its keystore
	// and portUnification=true, and still dials in plaintext.
	e := newSecuredEnsemble(t, func(i int, cfg *conf.Config) {
		pki.useTLS(t, cfg, nil, false, true)
	})
	e.launch(3)
	e.replicates(0, 2, "/plain")
	// Step 2, one member at a time: sslQuorum=true.
	tlsOn := func(c *conf.Config) { c.Quorum.SSL = true }
	e.restart(2, tlsOn)
	e.replicates(0, 2, "/mixed")
	e.replicates(2, 1, "/mixed-from-tls")
	e.restart(0, tlsOn)
	e.restart(1, tlsOn)
	e.replicates(1, 0, "/all-tls-dialing")
	// Step 3: portUnification=false; plaintext is refused from then on.
	e.restart(0, func(c *conf.Config) { c.Quorum.PortUnification = false })
	e.replicates(2, 0, "/tls-only")
	e.peerPortRefusesPlaintext(0)
}

// writeQuorumJAAS writes a JAAS file whose QuorumLearner logs in with
// learnerPassword; every member's QuorumServer knows the right one.
func writeQuorumJAAS(t *testing.T, learnerPassword string) string {
	return testutil.WriteQuorumJAAS(t, t.TempDir(), "quorum-secret", learnerPassword)
}

// useQuorumSASL turns quorum SASL on for cfg.
func useQuorumSASL(cfg *conf.Config, jaas string, require bool) {
	cfg.SASL.JAASConfigFile = jaas
	cfg.Quorum.SASL.Enable = true
	cfg.Quorum.SASL.LearnerRequire, cfg.Quorum.SASL.ServerRequire = require, require
}

// wrongPasswordEnsemble configures three members with quorum SASL
// (learnerRequireSasl and serverRequireSasl as require) whose third
// member's QuorumLearner password is wrong.
// force lets the two members that can log in found the new ensemble
// without the third (forceNewEnsemble).
func wrongPasswordEnsemble(t *testing.T, require, force bool) *securedEnsemble {
	right, wrong := writeQuorumJAAS(t, "quorum-secret"), writeQuorumJAAS(t, "not-the-secret")
	return newSecuredEnsemble(t, func(i int, cfg *conf.Config) {
		jaas := right
		if i == 2 {
			jaas = wrong
		}
		useQuorumSASL(cfg, jaas, require)
		cfg.ForceNewEnsemble = force
	})
}

func TestQuorumSASLRefusesAWrongPassword(t *testing.T) {
	e := wrongPasswordEnsemble(t, true, true)
	e.launch(2)
	e.replicates(0, 1, "/sasl")
	e.logged("a member refusing member 3's login", []int{0, 1}, "level=WARN", `wrong password for \"zkpeer\"`)
	e.logged("member 3 told of the refusal", []int{2}, "level=WARN", "refused by the member: login failed")
	if mode := e.Mode(2); mode == "leader" || mode == "follower" {
		t.Fatalf("the member with the wrong password is a %s", mode)
	}
	e.replicates(1, 0, "/sasl-still-serving")
}

func TestQuorumSASLWithoutRequireLetsEveryMemberIn(t *testing.T) {
	// quorum.auth.enableSasl without learnerRequireSasl: members do not
	// log in, so even a wrong QuorumLearner password joins (ZooKeeper's
	// first rolling-upgrade step).
	e := wrongPasswordEnsemble(t, false, false)
	e.launch(3)
	e.replicates(0, 2, "/open")
	e.replicates(2, 1, "/open2")
	for i := range e.logs {
		if lines := e.logs[i].Lines("member connection refused"); len(lines) > 0 {
			t.Errorf("member %d: a link was refused: %q", i+1, lines)
		}
	}
}
