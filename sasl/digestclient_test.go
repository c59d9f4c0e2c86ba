package sasl

import (
	"errors"
	"strings"
	"testing"
)

func TestDigestMD5ClientAgainstServer(t *testing.T) {
	users := map[string]string{"zkpeer": "right", "üser": "pässword"}
	tests := []struct {
		name, user, password, protocol string
		serverProtocol, serverName     string
		wantErr                        string // "": success
	}{
		{name: "quorum names", user: "zkpeer", password: "right", protocol: "zookeeper-quorum",
			serverProtocol: "zookeeper-quorum", serverName: "zk-quorum-sasl-md5"},
		{name: "client port names", user: "zkpeer", password: "right", protocol: "zookeeper",
			serverProtocol: "zookeeper", serverName: DigestRealm},
		{name: "non-ASCII credentials", user: "üser", password: "pässword", protocol: "zookeeper-quorum",
			serverProtocol: "zookeeper-quorum", serverName: "zk-quorum-sasl-md5"},
		{name: "wrong password", user: "zkpeer", password: "wrong", protocol: "zookeeper-quorum",
			serverProtocol: "zookeeper-quorum", serverName: "zk-quorum-sasl-md5", wantErr: "wrong password"},
		{name: "unknown user", user: "nobody", password: "right", protocol: "zookeeper-quorum",
			serverProtocol: "zookeeper-quorum", serverName: "zk-quorum-sasl-md5", wantErr: "unknown user"},
		{name: "other service", user: "zkpeer", password: "right", protocol: "zookeeper",
			serverProtocol: "zookeeper-quorum", serverName: "zk-quorum-sasl-md5", wantErr: "digest-uri"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server := NewDigestMD5ServerFor(users, tc.serverProtocol, tc.serverName)
			client := NewDigestMD5Client(tc.user, tc.password, tc.protocol)
			challenge, err := server.Evaluate(nil)
			if err != nil {
				t.Fatal(err)
			}
			response, err := client.Evaluate(challenge)
			if err != nil {
				t.Fatal(err)
			}
			rspauth, err := server.Evaluate(response)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("server error = %v; want ErrFailed with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !server.Complete() || server.AuthenticationID() != tc.user {
				t.Fatalf("server: err %v, complete %v, id %q", err, server.Complete(), server.AuthenticationID())
			}
			if _, err := client.Evaluate(rspauth); err != nil || !client.Complete() {
				t.Fatalf("client on rspauth: err %v, complete %v", err, client.Complete())
			}
		})
	}
}

func TestDigestMD5ClientRefusesAForgedRspAuth(t *testing.T) {
	// A server that does not know the password cannot compute rspauth.
	server := NewDigestMD5ServerFor(map[string]string{"zkpeer": "right"}, "zookeeper-quorum", "zk-quorum-sasl-md5")
	client := NewDigestMD5Client("zkpeer", "right", "zookeeper-quorum")
	challenge, _ := server.Evaluate(nil)
	if _, err := client.Evaluate(challenge); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Evaluate([]byte("rspauth=00112233445566778899aabbccddeeff")); err == nil || client.Complete() {
		t.Fatalf("forged rspauth accepted (err %v)", err)
	}
}

func TestJAASQuorumSections(t *testing.T) {
	j, err := ParseJAAS(`QuorumServer { org.apache.zookeeper.server.auth.DigestLoginModule required user_a="1"; };
QuorumLearner { org.apache.zookeeper.server.auth.DigestLoginModule required username="a" password="1"; };
Krb { com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true; };`)
	if err != nil {
		t.Fatal(err)
	}
	if u, p, ok := j.Credentials("QuorumLearner"); !ok || u != "a" || p != "1" {
		t.Errorf("Credentials(QuorumLearner) = %q %q %v", u, p, ok)
	}
	if _, _, ok := j.Credentials("QuorumServer"); ok {
		t.Error("QuorumServer has no username, yet Credentials found one")
	}
	for section, want := range map[string]bool{"Krb": true, "QuorumServer": false, "Missing": false} {
		if got := j.UsesKerberos(section); got != want {
			t.Errorf("UsesKerberos(%s) = %v, want %v", section, got, want)
		}
	}
}

// FuzzDigestMD5Client answers whatever an accepting member may send: no
// panic, and never a completed exchange, since the rspauth the client
// accepts depends on its own fresh cnonce.
func FuzzDigestMD5Client(f *testing.F) {
	challenge := `realm="zk-quorum-sasl-md5",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`
	f.Add([]byte(challenge), []byte("rspauth=0123456789abcdef0123456789abcdef"))
	f.Add([]byte(`nonce="",qop="auth-int"`), []byte(""))
	f.Add([]byte(`realm="a,b",nonce=x`), []byte("rspauth="))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		c := NewDigestMD5Client("zkpeer", "right", "zookeeper-quorum")
		if _, err := c.Evaluate(first); err == nil {
			c.Evaluate(second)
		}
		if c.Complete() {
			t.Fatalf("completed on %q then %q", first, second)
		}
	})
}
