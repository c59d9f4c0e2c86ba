package sasl

import (
	"errors"
	"strings"
	"testing"
)

// hadoopRules are the rules of the example that ZooKeeper's KerberosName
// (taken from Hadoop) is documented and tested with.
const hadoopRules = "RULE:[1:$1@$0](.*@YAHOO\\.COM)s/@.*//\n" +
	"RULE:[2:$1](johndoe)s/^.*$/guest/\n" +
	"RULE:[2:$1;$2](^.*;admin$)s/;admin$//\n" +
	"RULE:[2:$2](root)\n" +
	"DEFAULT"

func mustRules(t *testing.T, text string) []NameRule {
	t.Helper()
	r, err := ParseAuthToLocal(text)
	if err != nil {
		t.Fatalf("ParseAuthToLocal(%q): %v", text, err)
	}
	return r
}

func TestShortName(t *testing.T) {
	tests := []struct {
		rules, principal, want string // want "" = ErrNoRule
	}{
		{hadoopRules, "omalley@EXAMPLE.COM", "omalley"},
		{hadoopRules, "hdfs/host.example.com@EXAMPLE.COM", "hdfs"},
		{hadoopRules, "oom@YAHOO.COM", "oom"},
		{hadoopRules, "johndoe/zoo@FOO.COM", "guest"},
		{hadoopRules, "joe/admin@FOO.COM", "joe"},
		{hadoopRules, "joe/root@FOO.COM", "root"},
		{hadoopRules, "root/joe@FOO.COM", ""},     // no rule for a foreign realm
		{hadoopRules, "foo@ACME.COM", ""},         // likewise
		{"DEFAULT", "bob", "bob"},                 // a simple name is kept
		{"", "bob@EXAMPLE.COM", "bob"},            // "" is DEFAULT
		{"RULE:[1:$1@$0]", "bob@EXAMPLE.COM", ""}, // a non-simple result fails
		{"RULE:[1:$1]", "a/b@EXAMPLE.COM", ""},    // wrong component count
		{"RULE:[2:$2-$1]", "a/b@X", "b-a"},
		{"RULE:[1:$1x$0](.*)s/(a)(b)?/$1x$12\\$/g", "aab@R", "axa2$axa2$xR"},
		{"RULE:[1:$1]s/(?<u>.+)/${u}!/", "bob@R", "bob!"},
		{"RULE:[1:$3]", "bob@R", ""},                           // parameter out of range
		{"RULE:[1:$]", "bob@R", ""},                            // '$' without a number
		{"RULE:[1:$1](x.*) RULE:[1:$1]s/o/0/", "bob@R", "b0b"}, // first rule does not match
		{"RULE:[1:$1]s/b/B/", "bob@R", "Bob"},                  // without g: the first match only
	}
	for _, tt := range tests {
		t.Run(tt.rules+" "+tt.principal, func(t *testing.T) {
			r := NameRules{Rules: mustRules(t, tt.rules), DefaultRealm: "EXAMPLE.COM"}
			k, err := splitPrincipal(tt.principal)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.shortName(k)
			if tt.want == "" {
				if !errors.Is(err, ErrNoRule) {
					t.Fatalf("shortName = %q, %v; want ErrNoRule", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("shortName = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseAuthToLocalErrors(t *testing.T) {
	for _, text := range []string{
		"RULE:[1:$1@$0](.*@YAHOO\\.COM)s/@.*//\nfoo", // a word that is no rule
		"RULE:[:$1]",             // no component count
		"RULE:[1:$1]((a)\\1)",    // a back reference (Java only)
		"RULE:[1:$1]s/(?<=a)b//", // a look-behind (Java only)
		"RULE:[1:$1",             // unterminated
		"DEFAULTX",
	} {
		if r, err := ParseAuthToLocal(text); !errors.Is(err, ErrRuleSyntax) {
			t.Errorf("ParseAuthToLocal(%q) = %v, %v; want ErrRuleSyntax", text, r, err)
		}
	}
	r := mustRules(t, "  RULE:[2:$1](johndoe)s/^.*$/guest/g \n\n DEFAULT ")
	if len(r) != 2 || r[0].String() != "RULE:[2:$1](johndoe)s/^.*$/guest/g" || r[1].String() != "DEFAULT" {
		t.Errorf("rules %v", r)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name         string
		rules        NameRules
		authn, authz string
		want         string
		wantErr      bool
	}{
		{"digest user", NameRules{}, "bob", "", "bob", false},
		{"digest user asking for another id", NameRules{}, "bob", "super", "bob", false},
		{"removes do not touch a simple name", NameRules{RemoveHost: true, RemoveRealm: true}, "bob", "", "bob", false},
		{"principal kept", NameRules{}, "zk/host.example@EXAMPLE.COM", "", "zk/host.example@EXAMPLE.COM", false},
		{"host removed", NameRules{RemoveHost: true}, "zk/host.example@EXAMPLE.COM", "", "zk@EXAMPLE.COM", false},
		{"realm removed", NameRules{RemoveRealm: true}, "zk/host.example@EXAMPLE.COM", "", "zk/host.example", false},
		{"both removed", NameRules{RemoveHost: true, RemoveRealm: true}, "zk/host.example@EXAMPLE.COM", "", "zk", false},
		{"authzid ignored when a rule applies", NameRules{RemoveRealm: true}, "bob@EXAMPLE.COM", "super", "bob", false},
		{"authzid equal to the principal", NameRules{RemoveRealm: true}, "bob@EXAMPLE.COM", "bob@EXAMPLE.COM", "bob", false},
		{"foreign realm: no rule, the principal whole", NameRules{RemoveRealm: true}, "bob@OTHER.COM", "", "bob@OTHER.COM", true},
		{"foreign realm asking for another id: refused", NameRules{RemoveRealm: true}, "bob@OTHER.COM", "super", "", true},
		{"rules then removes", NameRules{RemoveHost: true, RemoveRealm: true}, "johndoe/zoo@FOO.COM", "", "guest", false},
		{"rules, host and realm kept", NameRules{}, "johndoe/zoo@FOO.COM", "", "guest/zoo@FOO.COM", false},
		{"malformed principal", NameRules{}, "a/b/c@EXAMPLE.COM", "", "a/b/c@EXAMPLE.COM", true},
		{"empty realm is a realm", NameRules{DefaultRealm: "x"}, "a@", "", "a@", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.rules
			if r.DefaultRealm == "" {
				r.DefaultRealm = "EXAMPLE.COM"
			}
			if strings.Contains(tt.authn, "FOO.COM") {
				r.Rules = mustRules(t, hadoopRules)
			}
			got, err := r.Identity(tt.authn, tt.authz)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Fatalf("Identity(%q, %q) = %q, %v; want %q (error %v)", tt.authn, tt.authz, got, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrNoRule) {
				t.Errorf("error %v does not wrap ErrNoRule", err)
			}
		})
	}
}

// FuzzParseAuthToLocal: any rule text parses or fails cleanly, and parsed
// rules map any principal without panicking.
func FuzzParseAuthToLocal(f *testing.F) {
	for _, s := range []string{hadoopRules, "DEFAULT", "RULE:[1:$1]s/(a)/$1$2\\/g", "RULE:[2:$2$1$0](x)", "RULE:[1:${"} {
		f.Add(s, "joe/admin@FOO.COM")
	}
	f.Fuzz(func(t *testing.T, text, principal string) {
		rules, err := ParseAuthToLocal(text)
		if err != nil {
			if !errors.Is(err, ErrRuleSyntax) {
				t.Fatalf("error %v is not ErrRuleSyntax", err)
			}
			return
		}
		id, err := NameRules{Rules: rules, DefaultRealm: "FOO.COM"}.Identity(principal, "")
		if err == nil && strings.Count(id, "@") > 1 {
			t.Fatalf("identity %q of %q has two realms", id, principal)
		}
	})
}
