package conf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseSSLKeys(t *testing.T) {
	full := DefaultSSL()
	full.KeyStore = Store{Location: "/k.p12", Password: "kp", PasswordPath: "/kpw", Type: "PKCS12"}
	full.TrustStore = Store{Location: "/t.jks", Password: "tp", PasswordPath: "/tpw", Type: "JKS"}
	full.ClientAuth = "want"
	full.Protocol = "TLSv1.3"
	full.EnabledProtocols = []string{"TLSv1.2", "TLSv1.3"}
	full.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}
	full.HostnameVerification = false
	full.AuthProvider = "x509b"
	full.PortUnification = true
	full.CertReload = true
	fullLines := []string{
		"ssl.keyStore.location=/k.p12", "ssl.keyStore.password=kp", "ssl.keyStore.passwordPath=/kpw",
		"ssl.keyStore.type=pkcs12", "ssl.trustStore.location=/t.jks", "ssl.trustStore.password=tp",
		"ssl.trustStore.passwordPath=/tpw", "ssl.trustStore.type=JKS", "ssl.clientAuth=WANT",
		"ssl.protocol=TLSv1.3", "ssl.enabledProtocols=TLSv1.2, TLSv1.3",
		"ssl.ciphersuites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
		"ssl.hostnameVerification=false", "ssl.authProvider=x509b", "client.portUnification=true",
		"client.certReload=TRUE",
	}
	tests := []struct {
		name  string
		lines []string
		want  SSL
	}{
		{"defaults", nil, DefaultSSL()},
		{"every key", fullLines, full},
		{"every key with the zookeeper. prefix", withZookeeperPrefix(fullLines), full},
		{"empty clientAuth is need", []string{"ssl.clientAuth="}, DefaultSSL()},
		{"certReload false", []string{"client.certReload=false"}, DefaultSSL()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseLines(t, tt.lines)
			if !reflect.DeepEqual(c.SSL, tt.want) {
				t.Fatalf("SSL = %+v\nwant  %+v", c.SSL, tt.want)
			}
		})
	}
}

func TestParseSSLFromSystemProperties(t *testing.T) {
	sys, notes := SystemProperties([]string{"SERVER_JVMFLAGS=-Dzookeeper.ssl.keyStore.location=/a.pem -Dzookeeper.ssl.clientAuth=none " +
		"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory -Dzookeeper.client.portUnification=true"})
	if len(notes) != 1 {
		t.Fatalf("notes %q, want one for serverCnxnFactory", notes)
	}
	c, _, err := Parse(strings.NewReader("ssl.clientAuth=want\n"), sys...)
	if err != nil {
		t.Fatal(err)
	}
	if c.SSL.KeyStore.Location != "/a.pem" || c.SSL.ClientAuth != "want" || !c.SSL.PortUnification {
		t.Fatalf("SSL = %+v: want the -D keystore and port unification, and the file's clientAuth", c.SSL)
	}
}

// TestParseCertReloadNotTrue: ZooKeeper reads client.certReload with
// Boolean.getBoolean, so any value other than "true" means off.
func TestParseCertReloadNotTrue(t *testing.T) {
	for _, line := range []string{"client.certReload=yes", "zookeeper.client.certReload=1", "client.certReload="} {
		t.Run(line, func(t *testing.T) {
			c, warnings, err := parseString(t, line)
			if err != nil {
				t.Fatal(err)
			}
			if c.SSL.CertReload {
				t.Error("CertReload = true, want false")
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "certificate reload stays off") {
				t.Errorf("warnings %q, want one saying reload stays off", warnings)
			}
		})
	}
}

// TestParseSecurityBadValues covers the client port's and the member
// links' TLS keys (one parser) and their switches.
func TestParseSecurityBadValues(t *testing.T) {
	tests := []struct{ line, key string }{
		{"ssl.clientAuth=maybe", "ssl.clientAuth"},
		{"zookeeper.ssl.keyStore.type=BCFKS", "zookeeper.ssl.keyStore.type"},
		{"ssl.trustStore.type=p12", "ssl.trustStore.type"},
		{"ssl.hostnameVerification=yes", "ssl.hostnameVerification"},
		{"client.portUnification=1", "client.portUnification"},
		{"sslQuorum=yes", "sslQuorum"},
		{"portUnification=1", "portUnification"},
		{"quorum.auth.enableSasl=on", "quorum.auth.enableSasl"},
		{"zookeeper.ssl.quorum.keyStore.type=BCFKS", "zookeeper.ssl.quorum.keyStore.type"},
		{"ssl.quorum.clientAuth=maybe", "ssl.quorum.clientAuth"},
		{"ssl.quorum.hostnameVerification=no", "ssl.quorum.hostnameVerification"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, _, err := parseString(t, tt.line)
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key {
				t.Fatalf("err = %v, want a KeyError for %s", err, tt.key)
			}
		})
	}
}

func TestSecureClientPortAloneHasNoPlaintextPort(t *testing.T) {
	tests := []struct {
		text          string
		noClientPort  bool
		tlsEnabled    bool
		validateError string // key named by Validate, "" = valid
	}{
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem", true, true, ""},
		{"secureClientPort=2281\nclientPort=2181\nssl.keyStore.location=/k.pem", false, true, ""},
		{"clientPort=2181\nclient.portUnification=true\nssl.keyStore.location=/k.pem", false, true, ""},
		{"clientPort=2181", false, false, ""},
		{"secureClientPort=2281", true, true, "ssl.keyStore.location"},
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.protocol=SSLv3", true, true, "ssl.protocol"},
		{"secureClientPort=2281\nssl.keyStore.location=/k.pem\nssl.enabledProtocols=TLSv1.2,TLSv9", true, true, "ssl.protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			c, _, err := parseString(t, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if c.NoClientPort != tt.noClientPort || c.TLSEnabled() != tt.tlsEnabled {
				t.Fatalf("NoClientPort=%v TLSEnabled=%v, want %v %v", c.NoClientPort, c.TLSEnabled(), tt.noClientPort, tt.tlsEnabled)
			}
			err = c.Validate()
			var ke *KeyError
			switch {
			case tt.validateError == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.validateError != "" && (!errors.As(err, &ke) || ke.Key != tt.validateError):
				t.Fatalf("Validate = %v, want an error for %s", err, tt.validateError)
			}
		})
	}
}

func TestSecurityKeysRefused(t *testing.T) {
	tests := []struct{ line, key, want string }{
		{"ssl.crl=true", "ssl.crl", "revocation"},
		{"zookeeper.ssl.ocsp=TRUE", "zookeeper.ssl.ocsp", "revocation"},
		{"ssl.quorum.crl=true", "ssl.quorum.crl", "revocation"},
		{"zookeeper.ssl.quorum.ocsp=true", "zookeeper.ssl.quorum.ocsp", "revocation"},
		{"ssl.quorum.context.supplier.class=com.example.Supplier", "ssl.quorum.context.supplier.class", "SSLContext"},
		{"ssl.context.supplier.class=com.example.Supplier", "ssl.context.supplier.class", "SSLContext"},
		{"DigestAuthenticationProvider.digestAlg=SHA-256", "DigestAuthenticationProvider.digestAlg", "SHA1"},
		{"zookeeper.DigestAuthenticationProvider.enabled=false", "zookeeper.DigestAuthenticationProvider.enabled", "cannot be turned off"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, _, err := parseString(t, tt.line)
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a KeyError for %s saying %q", err, tt.key, tt.want)
			}
		})
	}
}

func TestSecurityKeysAccepted(t *testing.T) {
	text := strings.Join([]string{
		"ssl.crl=false", "ssl.ocsp=false", "DigestAuthenticationProvider.digestAlg=SHA1",
		"DigestAuthenticationProvider.enabled=true", "ssl.allowReverseDnsLookup=true",
		"zookeeper.fips-mode=false", "netty.server.outstandingHandshake.limit=10", "kinit=/usr/bin/kinit",
		"ssl.handshakeDetectionTimeoutMillis=5000",
	}, "\n")
	c, warnings, err := parseString(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q, want none", warnings)
	}
	want := []string{
		"kinit: accepted, not acted on: ",
		"netty.server.outstandingHandshake.limit: accepted, not acted on: ",
		"ssl.allowReverseDnsLookup: accepted, not acted on: ",
		"ssl.handshakeDetectionTimeoutMillis: accepted, not acted on: ",
		"zookeeper.fips-mode: accepted, not acted on: ",
	}
	got := c.IgnoredSecurityKeys()
	if len(got) != len(want) {
		t.Fatalf("IgnoredSecurityKeys = %q, want lines starting %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}
