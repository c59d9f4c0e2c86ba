//go:build kerberos

package test

// The Kerberos integration test: a private realm served by Debian's
// krb5kdc on loopback, zkserverd with a JAAS Krb5LoginModule, and a GSSAPI
// login from a gokrb5 client. Run it with `make kerberos`, which installs
// krb5-kdc, krb5-admin-server and krb5-user when missing.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"

	"github.com/zkserverd/zkserverd/conf"
	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/jute"
	"github.com/zkserverd/zkserverd/sasl/gssapitest"
)

const krbRealm = "EXAMPLE.TEST"

// kdc is a running private realm.
type kdc struct {
	dir, krb5conf string
	serverKeytab  string
	clientKeytab  string
}

// krbTool finds a Kerberos program or fails the test with the way to get it.
func krbTool(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatalf("%s not found: run `make kerberos` (it installs krb5-kdc, krb5-admin-server, krb5-user)", name)
	return ""
}

// startKDC creates the realm's database and principals in a temp dir and
// runs krb5kdc in the foreground on a free loopback port until the test ends.
func startKDC(t *testing.T) *kdc {
	t.Helper()
	kdcBin, util, kadmin := krbTool(t, "krb5kdc"), krbTool(t, "kdb5_util"), krbTool(t, "kadmin.local")
	k := &kdc{dir: t.TempDir()}
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	k.krb5conf = filepath.Join(k.dir, "krb5.conf")
	kdcConf := filepath.Join(k.dir, "kdc.conf")
	write(t, k.krb5conf, fmt.Sprintf(`[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 noaddresses = true
 udp_preference_limit = 1
 ticket_lifetime = 1h
[realms]
 %[1]s = {
  kdc = %[2]s
 }
`, krbRealm, addr))
	write(t, kdcConf, fmt.Sprintf(`[kdcdefaults]
 kdc_listen = %[2]s
 kdc_tcp_listen = %[2]s
[realms]
 %[1]s = {
  database_name = %[3]s/principal
  key_stash_file = %[3]s/stash
  acl_file = %[3]s/kadm5.acl
  kdc_listen = %[2]s
  kdc_tcp_listen = %[2]s
  max_life = 1h
 }
[logging]
 kdc = FILE:%[3]s/kdc.log
`, krbRealm, addr, k.dir))
	write(t, filepath.Join(k.dir, "kadm5.acl"), "")
	env := append(os.Environ(), "KRB5_CONFIG="+k.krb5conf, "KRB5_KDC_PROFILE="+kdcConf)
	run := func(name string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(util, "-r", krbRealm, "create", "-s", "-P", "master-password")
	k.serverKeytab = filepath.Join(k.dir, "zk.keytab")
	k.clientKeytab = filepath.Join(k.dir, "client.keytab")
	for _, p := range []string{"zookeeper/localhost", "other/localhost", "client", "app/node1"} {
		run(kadmin, "-r", krbRealm, "-q", "addprinc -randkey "+p)
	}
	run(kadmin, "-r", krbRealm, "-q", "ktadd -k "+k.serverKeytab+" zookeeper/localhost")
	run(kadmin, "-r", krbRealm, "-q", "ktadd -k "+k.clientKeytab+" client app/node1")

	cmd := exec.Command(kdcBin, "-n", "-r", krbRealm)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("krb5kdc: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return k
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(k.dir, "kdc.log"))
			t.Fatalf("krb5kdc does not listen on %s: %v\n%s", addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// kerberosConfig is a server whose JAAS Server section logs in with the
// realm's zookeeper/localhost keytab.
func kerberosConfig(t *testing.T, k *kdc, adjust func(*conf.SASL)) conf.Config {
	t.Helper()
	cfg := aclConfig(t)
	cfg.SASL.JAASConfigFile = kerberosJAAS(t, "Server", k.serverKeytab, "zookeeper/localhost@"+krbRealm)
	cfg.SASL.Krb5ConfigFile = k.krb5conf
	cfg.AuthProviders = map[int]string{1: "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"}
	if adjust != nil {
		adjust(&cfg.SASL)
	}
	return cfg
}

// kerberosLogin gets a ticket for spn from the KDC as user (from the
// client keytab) and runs the GSSAPI login; it returns the last reply's
// header and how long that reply took.
func kerberosLogin(t *testing.T, k *kdc, r *rawClient, user, spn string, mutual bool) (jute.ReplyHeader, time.Duration) {
	t.Helper()
	kcfg, err := krbconfig.Load(k.krb5conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(k.clientKeytab)
	if err != nil {
		t.Fatal(err)
	}
	cl := client.NewWithKeytab(user, krbRealm, kt, kcfg, client.DisablePAFXFAST(true))
	defer cl.Destroy()
	if err := cl.Login(); err != nil {
		t.Fatalf("kinit %s: %v", user, err)
	}
	tkt, key, err := cl.GetServiceTicket(spn)
	if err != nil {
		t.Fatalf("service ticket %s: %v", spn, err)
	}
	c := &gssapitest.Client{Ticket: tkt, SessionKey: key, CName: cl.Credentials.CName(), CRealm: krbRealm,
		Mutual: mutual, AuthzID: user + "@" + krbRealm}
	tok, err := c.Initial()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		h, out, took := saslCall(t, r, tok)
		if h.Err != jute.OK || c.Done {
			return h, took
		}
		if tok, err = c.Step(out); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	t.Fatal("the login did not end in 4 round trips")
	return jute.ReplyHeader{}, 0
}

// TestKerberosLogin logs in with GSSAPI against a real KDC and checks the
// identity the name rules give, a sasl ACL, and a failed login.
func TestKerberosLogin(t *testing.T) {
	k := startKDC(t)
	tests := []struct {
		name   string
		adjust func(*conf.SASL)
		user   string
		mutual bool
		want   string
	}{
		{"full principal", nil, "client", true, "client@" + krbRealm},
		{"removeRealmFromPrincipal", func(s *conf.SASL) { s.RemoveRealmFromPrincipal = true }, "client", false, "client"},
		{"host kept", func(s *conf.SASL) { s.RemoveRealmFromPrincipal = true }, "app/node1", true, "app/node1"},
		{"host and realm removed", func(s *conf.SASL) { s.RemoveHostFromPrincipal, s.RemoveRealmFromPrincipal = true, true }, "app/node1", false, "app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, kerberosConfig(t, k, tt.adjust))
			addr := srv.Addr().String()
			r := saslSession(t, addr)
			if h, _ := kerberosLogin(t, k, r, tt.user, "zookeeper/localhost", tt.mutual); h.Err != jute.OK || h.Zxid != 0 {
				t.Fatalf("login: reply %+v", h)
			}
			if info := aclWhoAmI(t, r); !hasID(info, "sasl", tt.want) {
				t.Fatalf("whoAmI = %+v, want sasl:%s", info, tt.want)
			}
			acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "sasl", ID: tt.want}}}
			if h, _ := r.call(jute.OpCreate, &jute.CreateRequest{Path: "/k", Data: []byte("x"), ACL: acl}); h.Err != jute.OK {
				t.Fatalf("create with sasl:%s ACL: %v", tt.want, h.Err)
			}
			if h, _ := r.call(jute.OpGetData, &jute.PathWatchRequest{Path: "/k"}); h.Err != jute.OK {
				t.Errorf("read as sasl:%s: %v", tt.want, h.Err)
			}
			if h, _ := saslSession(t, addr).call(jute.OpGetData, &jute.PathWatchRequest{Path: "/k"}); h.Err != jute.NoAuth {
				t.Errorf("anonymous read: %v, want NoAuth", h.Err)
			}
		})
	}
	t.Run("super user", func(t *testing.T) {
		srv := startServer(t, kerberosConfig(t, k, func(s *conf.SASL) { s.SuperUsers = []string{"client@" + krbRealm} }))
		r := saslSession(t, srv.Addr().String())
		if h, _ := kerberosLogin(t, k, r, "client", "zookeeper/localhost", true); h.Err != jute.OK {
			t.Fatalf("login: %v", h.Err)
		}
		if info := aclWhoAmI(t, r); !hasID(info, "super", "") {
			t.Errorf("whoAmI = %+v, want super", info)
		}
	})
	t.Run("ticket the server has no key for", func(t *testing.T) {
		srv := startServer(t, kerberosConfig(t, k, nil))
		r := saslSession(t, srv.Addr().String())
		h, took := kerberosLogin(t, k, r, "client", "other/localhost", true)
		if h.Err != jute.AuthFailed || h.Zxid != 0 {
			t.Fatalf("reply %+v, want AuthFailed", h)
		}
		if took > 2*time.Second {
			t.Errorf("AuthFailed took %v", took)
		}
		r.expectClosed(5 * time.Second)
	})
}

// javaJars is the class path of the compat suite's Java program
// (test/compat/runner/env.go lists the same Debian jars).
var javaJars = []string{
	"/usr/share/java/curator-recipes.jar", "/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar", "/usr/share/java/zookeeper.jar",
	"/usr/share/java/zookeeper-jute.jar", "/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar", "/usr/share/java/guava.jar",
	"/usr/share/java/slf4j-api.jar", "/usr/share/java/slf4j-nop.jar",
}

// buildJavaCompat compiles test/compat/java/JavaCompat.java and returns the
// class path to run it with.
func buildJavaCompat(t *testing.T) string {
	t.Helper()
	for _, f := range append([]string{"/usr/bin/javac", "/usr/share/java/slf4j-simple.jar"}, javaJars...) {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s missing: run `make kerberos` (it installs the Java client, Curator and ZooKeeper)", f)
		}
	}
	classes := t.TempDir()
	jars := strings.Join(javaJars, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "javac", "-nowarn", "-cp", jars, "-d", classes,
		filepath.Join("compat", "java", "JavaCompat.java")).CombinedOutput()
	if err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return classes + ":" + jars
}

// kerberosJAAS writes a JAAS file with one Krb5LoginModule keytab section.
func kerberosJAAS(t *testing.T, section, keytab, principal string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jaas.conf")
	write(t, path, fmt.Sprintf(`%s {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="%s"
  storeKey=true
  useTicketCache=false
  principal="%s";
};
`, section, keytab, principal))
	return path
}

// startZooKeeperKerberos runs Apache ZooKeeper (Debian's jars) standalone
// with a Kerberos JAAS Server section, configured as kerberosConfig
// configures zkserverd with removeRealmFromPrincipal, and returns its
// client port.
func startZooKeeperKerberos(t *testing.T, k *kdc) int {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	cfg := filepath.Join(dir, "zoo.cfg")
	write(t, cfg, fmt.Sprintf("tickTime=1000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n4lw.commands.whitelist=*\nadmin.enableServer=false\n",
		filepath.Join(dir, "data"), port))
	jaas := kerberosJAAS(t, "Server", k.serverKeytab, "zookeeper/localhost@"+krbRealm)
	cmd := exec.Command("java", "-Xmx256m",
		"-Djava.security.auth.login.config="+jaas, "-Djava.security.krb5.conf="+k.krb5conf,
		"-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
		"-Dzookeeper.kerberos.removeRealmFromPrincipal=true",
		"-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfg)
	var log strings.Builder
	cmd.Stdout = &syncWriter{b: &log}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("ZooKeeper's log:\n%s", log.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testutil.Eventually(t, 60*time.Second, "ZooKeeper answering ruok", func() bool {
		out, err := testutil.FourLetter(addr, "ruok")
		return err == nil && out == "imok"
	})
	return port
}

// kerberosServers are the servers the stock clients log in to: zkserverd
// (in process, kerberosConfig with removeRealmFromPrincipal) and Apache
// ZooKeeper configured the same way; start returns the client port.
func kerberosServers(k *kdc) []struct {
	name  string
	start func(t *testing.T) int
} {
	return []struct {
		name  string
		start func(t *testing.T) int
	}{
		{"zkserverd", func(t *testing.T) int {
			srv := startServer(t, kerberosConfig(t, k, func(s *conf.SASL) { s.RemoveRealmFromPrincipal = true }))
			return srv.Addr().(*net.TCPAddr).Port
		}},
		{"zookeeper", func(t *testing.T) int { return startZooKeeperKerberos(t, k) }},
	}
}

// TestKerberosJavaClient runs the stock Java client's GSSAPI login (JAAS
// Client section with a Krb5LoginModule keytab) against zkserverd and, for
// comparison, against Apache ZooKeeper configured the same way: the
// compat program's "kerberos" scenario checks the identity sasl:client, a
// sasl ACL and an anonymous NoAuth.
func TestKerberosJavaClient(t *testing.T) {
	k := startKDC(t)
	classpath := buildJavaCompat(t)
	clientJAAS := kerberosJAAS(t, "Client", k.clientKeytab, "client@"+krbRealm)
	for _, s := range kerberosServers(k) {
		t.Run(s.name, func(t *testing.T) {
			port := s.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// The client asks for a ticket for zookeeper/<host of the
			// connect string>: localhost, not canonicalized.
			cmd := exec.CommandContext(ctx, "java", "-Xmx256m",
				"-Djava.security.auth.login.config="+clientJAAS, "-Djava.security.krb5.conf="+k.krb5conf,
				"-Dzookeeper.sasl.client.canonicalize.hostname=false",
				"-cp", classpath, "JavaCompat", fmt.Sprintf("localhost:%d", port), "kerberos")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("Java client: %v\n%s", err, out)
			}
			for _, want := range []string{"ok   GSSAPI login succeeds", "ok   whoAmI lists sasl:client",
				"ok   an anonymous client may not read it = NOAUTH", "kerberos: 0 failed check(s)"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("no line %q in the client's output:\n%s", want, out)
				}
			}
		})
	}
}

// TestKerberosKazoo runs kazoo's GSSAPI login (python3-pure-sasl over
// python3-kerberos, with a ticket cache kinit fills from the client keytab)
// against zkserverd and Apache ZooKeeper: the compat program's "kerberos"
// scenario checks that the auth ACL expands to sasl:client and an
// anonymous read gets NoAuth.
func TestKerberosKazoo(t *testing.T) {
	k := startKDC(t)
	kinit := krbTool(t, "kinit")
	if out, err := exec.Command("/usr/bin/python3", "-c", "import kazoo, puresasl, kerberos").CombinedOutput(); err != nil {
		t.Fatalf("kazoo, pure-sasl or kerberos missing for /usr/bin/python3 (run `make kerberos`): %v\n%s", err, out)
	}
	env := append(os.Environ(), "KRB5_CONFIG="+k.krb5conf,
		"KRB5CCNAME=FILE:"+filepath.Join(t.TempDir(), "ccache"), "PYTHONDONTWRITEBYTECODE=1")
	cmd := exec.Command(kinit, "-kt", k.clientKeytab, "client@"+krbRealm)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kinit: %v\n%s", err, out)
	}
	for _, s := range kerberosServers(k) {
		t.Run(s.name, func(t *testing.T) {
			port := s.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join("compat", "kazoo", "scenarios.py"),
				fmt.Sprintf("localhost:%d", port), "kerberos")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kazoo: %v\n%s", err, out)
			}
			for _, want := range []string{"ok   the auth ACL expands to the Kerberos identity", "kerberos: 0 failed check(s)"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("no line %q in kazoo's output:\n%s", want, out)
				}
			}
		})
	}
}
