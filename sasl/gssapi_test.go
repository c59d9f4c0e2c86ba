package sasl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/zkserverd/zkserverd/sasl"
	"github.com/zkserverd/zkserverd/sasl/gssapitest"
)

const testRealm = "EXAMPLE.TEST"

// testKeytab writes a keytab with a key of each principal (a password-derived
// AES key) and returns it and its path.
func testKeytab(t *testing.T, principals ...string) (*keytab.Keytab, string) {
	t.Helper()
	kt := keytab.New()
	for _, p := range principals {
		if err := kt.AddEntry(p, testRealm, "pw-"+p, time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "zk.keytab")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return kt, path
}

// ticketFor makes a service ticket for sname issued to client, as a KDC
// would, with the service key from kt.
func ticketFor(t *testing.T, kt *keytab.Keytab, client, sname string) (messages.Ticket, types.EncryptionKey) {
	t.Helper()
	now := time.Now().UTC()
	tkt, key, err := messages.NewTicket(types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, client), testRealm,
		types.NewPrincipalName(nametype.KRB_NT_SRV_INST, sname), testRealm, types.NewKrbFlags(), kt,
		etypeID.AES256_CTS_HMAC_SHA1_96, 1, now, now, now.Add(time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return tkt, key
}

// kerberosFactory is the factory of a JAAS section with a Krb5LoginModule
// (and DIGEST-MD5 users when digest).
func kerberosFactory(t *testing.T, ktPath string, digest bool) sasl.Setup {
	t.Helper()
	opts := map[string]string{"useKeyTab": "true", "keyTab": ktPath, "storeKey": "true", "principal": "zookeeper/localhost@" + testRealm}
	j := sasl.JAAS{"Server": {{Class: sasl.Krb5LoginModule, Flag: "required", Options: opts}}}
	if digest {
		j["Server"] = append(j["Server"], sasl.LoginModule{Class: "x.DigestLoginModule", Flag: "required", Options: map[string]string{"user_bob": "b"}})
	}
	krb5 := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = "+testRealm+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := sasl.NewFactory(j, sasl.Options{Section: "Server", Krb5Config: krb5})
	if err != nil || st.Factory == nil {
		t.Fatalf("NewFactory: %+v, %v", st, err)
	}
	return st
}

// TestKrb5RealmProperty: -Djava.security.krb5.realm completes a principal
// without a realm when no krb5.conf names one.
func TestKrb5RealmProperty(t *testing.T) {
	kt, ktPath := testKeytab(t, "zookeeper/localhost")
	opts := map[string]string{"useKeyTab": "true", "keyTab": ktPath, "principal": "zookeeper/localhost"}
	j := sasl.JAAS{"Server": {{Class: sasl.Krb5LoginModule, Flag: "required", Options: opts}}}
	empty := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(empty, []byte("[libdefaults]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sasl.NewFactory(j, sasl.Options{Section: "Server", Krb5Config: empty}); err == nil {
		t.Fatal("a principal without a realm and no default realm loaded")
	}
	st, err := sasl.NewFactory(j, sasl.Options{Section: "Server", Krb5Config: empty, Krb5Realm: testRealm})
	if err != nil || st.Kerberos == nil || st.Kerberos.Principal() != "zookeeper/localhost@"+testRealm {
		t.Fatalf("NewFactory with Krb5Realm: %+v, %v", st, err)
	}
	if opts["principal"] != "zookeeper/localhost" {
		t.Errorf("the JAAS options were changed: %v", opts)
	}
	tkt, key := ticketFor(t, kt, "alice", "zookeeper/localhost")
	pn, _ := types.ParseSPNString("alice")
	if err := run(st.Factory(), &gssapitest.Client{Ticket: tkt, SessionKey: key, CName: pn, CRealm: testRealm}); err != nil {
		t.Fatalf("login: %v", err)
	}
}

// run drives a login to its end and returns the server's last error.
func run(m sasl.Mechanism, c *gssapitest.Client) error {
	tok, err := c.Initial()
	if err != nil {
		return err
	}
	for i := 0; i < 5 && !m.Complete(); i++ {
		out, err := m.Evaluate(tok)
		if err != nil {
			return err
		}
		if m.Complete() {
			if out != nil {
				return errors.New("a token after completion")
			}
			return nil
		}
		if tok, err = c.Step(out); err != nil {
			return err
		}
	}
	if !m.Complete() {
		return errors.New("not complete after 5 steps")
	}
	return nil
}

func TestGSSAPILogin(t *testing.T) {
	kt, ktPath := testKeytab(t, "zookeeper/localhost", "other/localhost")
	tests := []struct {
		name    string
		digest  bool
		client  string
		sname   string
		adjust  func(*gssapitest.Client)
		wantErr string
	}{
		{"no mutual authentication", false, "alice", "zookeeper/localhost", nil, ""},
		{"mutual authentication", false, "alice", "zookeeper/localhost", func(c *gssapitest.Client) { c.Mutual = true }, ""},
		{"initiator subkey", false, "alice", "zookeeper/localhost", func(c *gssapitest.Client) { c.Mutual, c.SubKey = true, true }, ""},
		{"authzid is the principal", false, "app/node1", "zookeeper/localhost", func(c *gssapitest.Client) { c.AuthzID = "app/node1@" + testRealm }, ""},
		{"DIGEST-MD5 offered too", true, "alice", "zookeeper/localhost", nil, ""},
		{"ticket for another service", false, "alice", "other/localhost", nil, "AP-REQ"},
		{"another authzid: the identity is decided later", false, "alice", "zookeeper/localhost", func(c *gssapitest.Client) { c.AuthzID = "root@" + testRealm }, ""},
		{"a security layer", false, "alice", "zookeeper/localhost", func(c *gssapitest.Client) { c.Layer = 2 }, "security layer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := kerberosFactory(t, ktPath, tt.digest)
			tkt, key := ticketFor(t, kt, tt.client, tt.sname)
			pn, _ := types.ParseSPNString(tt.client)
			c := &gssapitest.Client{Ticket: tkt, SessionKey: key, CName: pn, CRealm: testRealm}
			if tt.adjust != nil {
				tt.adjust(c)
			}
			m := st.Factory()
			err := run(m, c)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, sasl.ErrFailed) || !strings.Contains(err.Error(), tt.wantErr) || m.Complete() {
					t.Fatalf("err %v (complete %v), want ErrFailed mentioning %q", err, m.Complete(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := m.AuthenticationID(), tt.client+"@"+testRealm; got != want {
				t.Errorf("AuthenticationID = %q, want %q", got, want)
			}
			if got := m.AuthorizationID(); got != c.AuthzID {
				t.Errorf("AuthorizationID = %q, want %q", got, c.AuthzID)
			}
			if _, err := m.Evaluate([]byte{1}); !errors.Is(err, sasl.ErrFailed) {
				t.Errorf("a token after completion: err %v", err)
			}
		})
	}
}

// TestGSSAPIBadTokens feeds malformed first tokens: each fails the login.
func TestGSSAPIBadTokens(t *testing.T) {
	_, ktPath := testKeytab(t, "zookeeper/localhost")
	st := kerberosFactory(t, ktPath, false)
	for _, tok := range [][]byte{{0x60}, {0x60, 0x03, 0x06, 0x01, 0x00}, []byte("garbage"), {0x60, 0x80, 0xff, 0xff}} {
		m := st.Factory()
		if _, err := m.Evaluate(tok); !errors.Is(err, sasl.ErrFailed) || m.Complete() {
			t.Errorf("token %x: err %v, complete %v", tok, err, m.Complete())
		}
	}
}

// TestLoadKerberosErrors checks that a broken Krb5LoginModule is an error.
func TestLoadKerberosErrors(t *testing.T) {
	_, ktPath := testKeytab(t, "zookeeper/localhost")
	tests := []struct {
		name string
		opts map[string]string
		want string
	}{
		{"no keyTab", map[string]string{"useKeyTab": "true", "principal": "zookeeper/localhost@" + testRealm}, "useKeyTab"},
		{"missing keytab file", map[string]string{"useKeyTab": "true", "keyTab": ktPath + ".absent", "principal": "zookeeper/localhost@" + testRealm}, "keytab"},
		{"no key for the principal", map[string]string{"useKeyTab": "true", "keyTab": ktPath, "principal": "zookeeper/otherhost@" + testRealm}, "no key"},
		{"no principal", map[string]string{"useKeyTab": "true", "keyTab": ktPath}, "no principal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sasl.LoadKerberos(sasl.LoginModule{Class: sasl.Krb5LoginModule, Options: tt.opts}, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	m := sasl.LoginModule{Class: sasl.Krb5LoginModule, Options: map[string]string{"useKeyTab": "true", "keyTab": ktPath, "principal": "zookeeper/localhost"}}
	krb5 := filepath.Join(t.TempDir(), "krb5.conf")
	if err := os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = "+testRealm+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := sasl.LoadKerberos(m, krb5)
	if err != nil || k.Principal() != "zookeeper/localhost@"+testRealm {
		t.Errorf("principal without a realm: %v, %v", k, err)
	}
}

// FuzzGSSAPIServer feeds the GSSAPI mechanism the tokens a client on the
// network could send: whatever they hold, each step answers with a token
// or an error, never a panic, and no fuzzed token sequence logs in.
func FuzzGSSAPIServer(f *testing.F) {
	f.Add([]byte{0x60, 0x03, 0x06, 0x01, 0x00}, []byte{})
	f.Add([]byte("garbage"), []byte{0x05, 0x04})
	f.Add([]byte{0x60, 0x80, 0xff, 0xff}, []byte{0x05, 0x04, 0x01, 0xff})
	var setup sasl.Setup // made once per fuzzing process
	f.Fuzz(func(t *testing.T, first, second []byte) {
		if setup.Factory == nil {
			_, ktPath := testKeytab(t, "zookeeper/localhost")
			setup = kerberosFactory(t, ktPath, false)
		}
		m := setup.Factory()
		if _, err := m.Evaluate(first); err != nil {
			return
		}
		m.Evaluate(second)
		if m.Complete() {
			t.Fatalf("fuzzed tokens logged in as %q", m.AuthenticationID())
		}
	})
}
