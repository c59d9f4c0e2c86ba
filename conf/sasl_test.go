package conf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseSASLKeys(t *testing.T) {
	tests := []struct {
		name    string
		cfg     string
		sys     []Property
		want    func(SASL) SASL // applied to DefaultSASL()
		schemes []string
	}{
		{"defaults", "", nil, func(s SASL) SASL { return s }, nil},
		{
			name: "zoo.cfg keys, with and without prefix",
			cfg: "java.security.auth.login.config=/etc/zk/jaas.conf\nzookeeper.sasl.serverconfig=ZkServer\n" +
				"superUser=admin\nzookeeper.superUser.2=root\nSASLAuthenticationProvider.superPassword=pw\n" +
				"zookeeper.allowSaslFailedClients=true\nkerberos.removeHostFromPrincipal=true\nzookeeper.kerberos.removeRealmFromPrincipal=TRUE\n" +
				"enforce.auth.enabled=true\nzookeeper.enforce.auth.schemes=sasl, digest\n",
			want: func(s SASL) SASL {
				s.JAASConfigFile, s.ServerSection = "/etc/zk/jaas.conf", "ZkServer"
				s.SuperUsers, s.SuperPassword = []string{"admin", "root"}, "pw"
				s.AllowFailedClients, s.RemoveHostFromPrincipal, s.RemoveRealmFromPrincipal = true, true, true
				s.EnforceAuthEnabled, s.EnforceAuthSchemes = true, []string{"sasl", "digest"}
				return s
			},
			schemes: []string{"sasl", "digest"},
		},
		{
			name: "system properties, the file wins",
			cfg:  "enforce.auth.schemes=digest\n",
			sys: []Property{{"java.security.auth.login.config", "/j.conf"}, {"zookeeper.sessionRequireClientSASLAuth", "true"},
				{"zookeeper.enforce.auth.schemes", "ip"}, {"java.security.krb5.conf", "/k.conf"},
				{"zookeeper.security.auth_to_local", "RULE:[1:$1] DEFAULT"}, {"zookeeper.requireKerberosConfig", "true"}},
			want: func(s SASL) SASL {
				s.JAASConfigFile, s.SessionRequireClientSASLAuth, s.EnforceAuthSchemes = "/j.conf", true, []string{"digest"}
				s.Krb5ConfigFile, s.AuthToLocal, s.RequireKerberosConfig = "/k.conf", "RULE:[1:$1] DEFAULT", true
				// Every -D property is kept for ${...} in the JAAS file.
				s.JVMProperties = map[string]string{"java.security.auth.login.config": "/j.conf",
					"zookeeper.sessionRequireClientSASLAuth": "true", "zookeeper.enforce.auth.schemes": "ip",
					"java.security.krb5.conf": "/k.conf", "zookeeper.security.auth_to_local": "RULE:[1:$1] DEFAULT",
					"zookeeper.requireKerberosConfig": "true"}
				return s
			},
			schemes: []string{"sasl"},
		},
		{
			name:    "schemes without enabled enforce nothing",
			cfg:     "enforce.auth.schemes=sasl\n",
			want:    func(s SASL) SASL { s.EnforceAuthSchemes = []string{"sasl"}; return s },
			schemes: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse(strings.NewReader(tt.cfg), tt.sys...)
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(DefaultSASL()); !reflect.DeepEqual(c.SASL, want) {
				t.Errorf("SASL = %+v, want %+v", c.SASL, want)
			}
			if got := c.SASL.EnforcedSchemes(); !reflect.DeepEqual(got, tt.schemes) {
				t.Errorf("EnforcedSchemes = %v, want %v", got, tt.schemes)
			}
			if got, want := c.SASL.SASLRequired(), len(tt.schemes) > 0 && tt.schemes[0] == "sasl"; got != want {
				t.Errorf("SASLRequired = %v, want %v", got, want)
			}
		})
	}
}

func TestSASLKeyErrors(t *testing.T) {
	if _, _, err := Parse(strings.NewReader("allowSaslFailedClients=maybe\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad boolean: err %v", err)
	}
	c, _, err := Parse(strings.NewReader("enforce.auth.enabled=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "enforce.auth.schemes") {
		t.Errorf("enforce without schemes: Validate = %v", err)
	}
	c, _, _ = Parse(strings.NewReader("enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n"))
	if err := c.Validate(); err != nil {
		t.Errorf("enforce with schemes: Validate = %v", err)
	}
	// java.security.krb5.realm and .kdc: both or neither, as in Java.
	for _, tt := range []struct {
		props []Property
		ok    bool
	}{
		{[]Property{{"java.security.krb5.realm", "EXAMPLE.COM"}, {"java.security.krb5.kdc", "kdc.example.com"}}, true},
		{[]Property{{"java.security.krb5.realm", "EXAMPLE.COM"}}, false},
		{[]Property{{"java.security.krb5.kdc", "kdc.example.com"}}, false},
	} {
		c, warnings, err := Parse(strings.NewReader(""), tt.props...)
		if err != nil || len(warnings) != 0 {
			t.Fatalf("%v: %v, warnings %q", tt.props, err, warnings)
		}
		if err := c.Validate(); (err == nil) != tt.ok || (err != nil && !strings.Contains(err.Error(), "java.security.krb5.kdc")) {
			t.Errorf("%v: Validate = %v, want ok %v", tt.props, err, tt.ok)
		}
		if tt.ok && c.SASL.Krb5Realm != "EXAMPLE.COM" {
			t.Errorf("Krb5Realm = %q", c.SASL.Krb5Realm)
		}
	}
}

// TestSASLFromJVMFlags checks that the JAAS file and SASL keys come through
// SERVER_JVMFLAGS as zkServer.sh passes them.
func TestSASLFromJVMFlags(t *testing.T) {
	env := []string{"SERVER_JVMFLAGS=-Djava.security.auth.login.config=/etc/zk/jaas.conf -Djava.security.krb5.conf=/etc/zk/krb5.conf -Dzookeeper.superUser=admin",
		"JVMFLAGS=-Dzookeeper.allowSaslFailedClients=true"}
	props, _ := SystemProperties(env)
	c, _, err := Parse(strings.NewReader(""), props...)
	if err != nil {
		t.Fatal(err)
	}
	if c.SASL.JAASConfigFile != "/etc/zk/jaas.conf" || !reflect.DeepEqual(c.SASL.SuperUsers, []string{"admin"}) || !c.SASL.AllowFailedClients ||
		c.SASL.Krb5ConfigFile != "/etc/zk/krb5.conf" {
		t.Errorf("SASL = %+v", c.SASL)
	}
}
