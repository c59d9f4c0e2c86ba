package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMakeKeys makes the key material with openssl and keytool and checks
// what the secured scenarios rely on: alice's chain verifies against the
// CA with her DN and the loopback SAN, the expired certificate has
// expired, mallory's does not verify, and every store exists.
func TestMakeKeys(t *testing.T) {
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (the compat targets install openjdk-17-jdk-headless)", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := makeKeys(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, k.path("ca.pem")))
	tests := []struct {
		name    string
		subject string // RFC 2253, "" to skip
		verify  bool
	}{
		{"server", "CN=localhost,O=zkserverd", true},
		{"alice", aliceDN, true},
		{"bob", bobDN, true},
		{"mallory", "", false},
		{"expired", "", false},
	}
	for _, tt := range tests {
		c := readCert(t, k.path(tt.name+".pem"))
		_, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
		if (err == nil) != tt.verify {
			t.Errorf("%s: verify error %v, want success %v", tt.name, err, tt.verify)
		}
		if tt.subject != "" && c.Subject.String() != tt.subject {
			t.Errorf("%s: subject %q, want %q", tt.name, c.Subject, tt.subject)
		}
		if len(c.IPAddresses) != 1 || c.IPAddresses[0].String() != "127.0.0.1" || !slices.Contains(c.DNSNames, "localhost") {
			t.Errorf("%s: SAN %v %v, want 127.0.0.1 and localhost", tt.name, c.IPAddresses, c.DNSNames)
		}
	}
	if c := readCert(t, k.path("expired.pem")); !time.Now().After(c.NotAfter) {
		t.Errorf("expired.pem is valid until %v", c.NotAfter)
	}
	for _, f := range []string{"client-jaas.conf", "truststore.jks", "alice.jks", "server.p12", "alice.p12", "bob.p12", "mallory.p12", "expired.p12", "alice.key"} {
		if st, err := os.Stat(k.path(f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := k.clientTLS("alice"); err != nil {
		t.Errorf("clientTLS: %v", err)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// TestSecuredServerSettings checks how the secured server is configured:
// the same keys for both kinds, the -D properties on ZooKeeper's command
// line and in zkserverd's SERVER_JVMFLAGS.
func TestSecuredServerSettings(t *testing.T) {
	k := keys("/k")
	cfg := splitLines(k.secureCfg(2281))
	for _, want := range []string{"secureClientPort=2281", "ssl.keyStore.location=/k/server.p12", "ssl.keyStore.password=changeit"} {
		if !slices.Contains(cfg, want) {
			t.Errorf("secureCfg has no line %q: %q", want, cfg)
		}
	}
	props := k.serverJVMProps()
	factory := "-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory"
	if !slices.Contains(props, factory) || !slices.Contains(props, "-Dzookeeper.ssl.trustStore.location=/k/truststore.jks") {
		t.Errorf("serverJVMProps = %q", props)
	}
	zk, err := serverArgv(kindZooKeeper, "/bin/zkserverd", "/c/zoo.cfg", false, props...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(zk, factory) {
		t.Errorf("ZooKeeper's argv lacks the factory: %q", zk)
	}
	env := serverEnv(kindZkserverd, props)
	if len(env) != 1 || env[0] != "SERVER_JVMFLAGS="+strings.Join(props, " ") {
		t.Errorf("zkserverd's env = %q", env)
	}
	if env := serverEnv(kindZooKeeper, props); env != nil {
		t.Errorf("ZooKeeper's env = %q, want none", env)
	}
	for _, sasl := range []bool{false, true} {
		env := k.scenarioEnv(sasl)
		jvm := env[len(env)-1]
		if env[0] != "ZKCOMPAT_KEYS=/k" || !strings.Contains(jvm, "-Dzookeeper.client.secure=true") ||
			strings.Contains(jvm, "-Djava.security.auth.login.config=/k/client-jaas.conf") != sasl {
			t.Errorf("scenarioEnv(%v) = %q", sasl, env)
		}
	}
	quorum := splitLines(k.quorumCfg())
	if !slices.Contains(quorum, "sslQuorum=true") || !slices.Contains(quorum, "ssl.quorum.trustStore.location=/k/truststore.jks") {
		t.Errorf("quorumCfg = %q", quorum)
	}
}
