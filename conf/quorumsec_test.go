package conf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseQuorumKeys(t *testing.T) {
	full := DefaultQuorum()
	full.SSL, full.PortUnification, full.ReloadCertFiles = true, true, true
	full.TLS = TLSKeys{
		KeyStore:   Store{Location: "/q.p12", Password: "kp", PasswordPath: "/kpw", Type: "PKCS12"},
		TrustStore: Store{Location: "/qt.pem", Password: "tp", PasswordPath: "/tpw", Type: "PEM"},
		ClientAuth: "want", Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
		CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, HostnameVerification: false,
	}
	full.SASL = QuorumSASL{Enable: true, LearnerRequire: true, ServerRequire: true,
		LearnerLoginContext: "Learner", ServerLoginContext: "Server2", KerberosServicePrincipal: "zkquorum/_HOST"}
	fullLines := []string{
		"sslQuorum=true", "portUnification=TRUE", "sslQuorumReloadCertFiles=true",
		"ssl.quorum.keyStore.location=/q.p12", "ssl.quorum.keyStore.password=kp", "ssl.quorum.keyStore.passwordPath=/kpw",
		"ssl.quorum.keyStore.type=pkcs12", "ssl.quorum.trustStore.location=/qt.pem", "ssl.quorum.trustStore.password=tp",
		"ssl.quorum.trustStore.passwordPath=/tpw", "ssl.quorum.trustStore.type=pem", "ssl.quorum.clientAuth=want",
		"ssl.quorum.protocol=TLSv1.3", "ssl.quorum.enabledProtocols=TLSv1.2,TLSv1.3",
		"ssl.quorum.ciphersuites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ssl.quorum.hostnameVerification=false",
		"quorum.auth.enableSasl=true", "quorum.auth.learnerRequireSasl=true", "quorum.auth.serverRequireSasl=true",
		"quorum.auth.learner.saslLoginContext=Learner", "quorum.auth.server.saslLoginContext=Server2",
		"quorum.auth.kerberos.servicePrincipal=zkquorum/_HOST",
	}
	tests := []struct {
		name  string
		lines []string
		want  Quorum
	}{
		{"defaults", nil, DefaultQuorum()},
		{"every key", fullLines, full},
		{"every key with the zookeeper. prefix", withZookeeperPrefix(fullLines), full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseLines(t, tt.lines)
			if !reflect.DeepEqual(c.Quorum, tt.want) {
				t.Fatalf("Quorum = %+v\nwant     %+v", c.Quorum, tt.want)
			}
			if c.SSL.PortUnification {
				t.Fatal("portUnification (quorum) set client.portUnification")
			}
		})
	}
}

func TestParseQuorumKeysFromSystemProperties(t *testing.T) {
	sys, _ := SystemProperties([]string{"SERVER_JVMFLAGS=-Dzookeeper.ssl.quorum.keyStore.location=/a.pem " +
		"-Dquorum.auth.enableSasl=true -Dzookeeper.sslQuorum=true"})
	c, _, err := Parse(strings.NewReader("ssl.quorum.keyStore.location=/b.pem\n"), sys...)
	if err != nil {
		t.Fatal(err)
	}
	if c.Quorum.TLS.KeyStore.Location != "/b.pem" || !c.Quorum.SASL.Enable || !c.Quorum.SSL {
		t.Fatalf("Quorum = %+v: want sslQuorum and enableSasl from -D, the file's keystore", c.Quorum)
	}
}

func TestValidateQuorum(t *testing.T) {
	const ensemble = "server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.2:2888:3888\n"
	const jaas = "java.security.auth.login.config=/jaas.conf\n"
	tests := []struct {
		text    string
		wantKey string // "" = valid
		reason  string
	}{
		{"sslQuorum=true\nssl.quorum.keyStore.location=/k.p12", "", ""},
		{"portUnification=true\nssl.quorum.keyStore.location=/k.p12", "", ""},
		{"sslQuorum=true", "ssl.quorum.keyStore.location", "sslQuorum=true"},
		{"portUnification=true", "ssl.quorum.keyStore.location", "portUnification=true"},
		{"sslQuorum=true\nssl.quorum.keyStore.location=/k.p12\nssl.quorum.protocol=SSLv3", "ssl.quorum.protocol", "not a TLS protocol"},
		{jaas + "quorum.auth.enableSasl=true", "", ""},
		{jaas + "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\nquorum.auth.serverRequireSasl=true", "", ""},
		{"quorum.auth.enableSasl=true", "quorum.auth.enableSasl", "needs a JAAS file"},
		{jaas + "quorum.auth.learnerRequireSasl=true", "quorum.auth.learnerRequireSasl", "needs quorum.auth.enableSasl"},
		{jaas + "quorum.auth.enableSasl=true\nquorum.auth.serverRequireSasl=true", "quorum.auth.serverRequireSasl", "needs quorum.auth.learnerRequireSasl"},
		{jaas + "quorum.auth.enableSasl=true\nquorum.auth.server.saslLoginContext=", "quorum.auth.server.saslLoginContext", "must not be empty"},
		{"quorum.auth.kerberos.servicePrincipal=zkquorum/h@R", "", ""},
		{"standalone:sslQuorum=true", "", ""},
		{"standalone:quorum.auth.enableSasl=true", "", ""},
		{"standalone:quorum.auth.learnerRequireSasl=true", "quorum.auth.learnerRequireSasl", "needs quorum.auth.enableSasl"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			text, standalone := strings.CutPrefix(tt.text, "standalone:")
			if !standalone {
				text = ensemble + text
			}
			c, _, err := parseString(t, text)
			if err != nil {
				t.Fatal(err)
			}
			c.MyID = 1
			err = c.Validate()
			var ke *KeyError
			switch {
			case tt.wantKey == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantKey != "" && (!errors.As(err, &ke) || ke.Key != tt.wantKey || !strings.Contains(err.Error(), tt.reason)):
				t.Fatalf("Validate = %v, want an error for %s saying %q", err, tt.wantKey, tt.reason)
			}
		})
	}
}
