package acl

import (
	"errors"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestSASLProvider(t *testing.T) {
	p := SASLProvider{}
	any := SASLProvider{AnyUser: "anyone-sasl"}
	matches := []struct {
		p        SASLProvider
		id, expr string
		want     bool
	}{
		{p, "bob", "bob", true},
		{p, "bob", "alice", false},
		{p, "super", "alice", true},
		{p, "bob", "anyone-sasl", false},
		{any, "bob", "anyone-sasl", true},
		{any, "bob", "alice", false},
	}
	for _, m := range matches {
		if got := m.p.Matches(m.id, m.expr); got != m.want {
			t.Errorf("%+v.Matches(%q, %q) = %v, want %v", m.p, m.id, m.expr, got, m.want)
		}
	}
	valid := map[string]bool{"bob": true, "zk/host@REALM": true, "bob@REALM": true, "a@b@c": false, "a/b/c@R": false}
	for id, want := range valid {
		if got := p.IsValid(id); got != want {
			t.Errorf("IsValid(%q) = %v, want %v", id, got, want)
		}
	}
	if _, err := p.Authenticate(ConnInfo{}, []byte("bob")); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("auth packet of scheme sasl: err %v", err)
	}
	if !p.IsAuthenticated() {
		t.Error("sasl ids must count for the auth scheme")
	}
}

// TestSASLACL checks a sasl ACL through the registry: only the named
// identity passes, and whoAmI reports the name.
func TestSASLACL(t *testing.T) {
	r := NewRegistry(Options{Providers: []Provider{SASLProvider{}}})
	entry := []jute.ACL{{Perms: jute.PermRead, ID: jute.ID{Scheme: SchemeSASL, ID: "bob"}}}
	tests := []struct {
		ids  []jute.ID
		want bool
	}{
		{[]jute.ID{{Scheme: SchemeSASL, ID: "bob"}}, true},
		{[]jute.ID{{Scheme: SchemeSASL, ID: "alice"}}, false},
		{[]jute.ID{{Scheme: SchemeDigest, ID: "bob"}}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := r.Allowed(entry, tt.ids, jute.PermRead); got != tt.want {
			t.Errorf("Check(sasl:bob, %v) = %v, want %v", tt.ids, got, tt.want)
		}
	}
	info := r.ClientInfo([]jute.ID{{Scheme: SchemeSASL, ID: "bob"}})
	if len(info) != 1 || info[0].AuthScheme != "sasl" || info[0].User != "bob" {
		t.Errorf("ClientInfo = %+v", info)
	}
}
