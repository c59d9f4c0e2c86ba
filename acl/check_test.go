package acl

import (
	"fmt"
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// id is shorthand for a jute.ID.
func id(scheme, v string) jute.ID { return jute.ID{Scheme: scheme, ID: v} }

// entry is shorthand for a jute.ACL.
func entry(perms int32, scheme, v string) jute.ACL {
	return jute.ACL{Perms: perms, ID: id(scheme, v)}
}

var (
	aliceDigest = Digest("alice:secret")
	client4     = id(SchemeIP, "10.1.2.3")
	client6     = id(SchemeIP, "2001:db8:0:0:0:0:0:1")
	permBits    = []int32{jute.PermRead, jute.PermWrite, jute.PermCreate, jute.PermDelete, jute.PermAdmin}
)

// principal is an ACL entry id with identities that do and do not satisfy it.
type principal struct {
	name    string
	entry   jute.ID
	match   [][]jute.ID
	nomatch [][]jute.ID
}

var principals = []principal{
	{
		name:  "world",
		entry: id(SchemeWorld, "anyone"),
		match: [][]jute.ID{nil, {client4}, {id(SchemeDigest, aliceDigest)}},
	},
	{
		name:    "digest",
		entry:   id(SchemeDigest, aliceDigest),
		match:   [][]jute.ID{{client4, id(SchemeDigest, aliceDigest)}},
		nomatch: [][]jute.ID{nil, {client4}, {id(SchemeDigest, Digest("alice:wrong"))}, {id(SchemeDigest, Digest("bob:secret"))}, {id(SchemeIP, aliceDigest)}},
	},
	{
		name:    "ip v4 exact",
		entry:   id(SchemeIP, "10.1.2.3"),
		match:   [][]jute.ID{{client4}},
		nomatch: [][]jute.ID{nil, {id(SchemeIP, "10.1.2.4")}, {id(SchemeDigest, "10.1.2.3")}},
	},
	{
		name:    "ip v4 cidr",
		entry:   id(SchemeIP, "10.1.0.0/16"),
		match:   [][]jute.ID{{client4}, {id(SchemeIP, "10.1.255.254")}},
		nomatch: [][]jute.ID{{id(SchemeIP, "10.2.0.1")}, {client6}, {id(SchemeIP, "0:0:0:0:0:ffff:a01:203")}},
	},
	{
		name:    "ip v6 cidr",
		entry:   id(SchemeIP, "2001:db8::/32"),
		match:   [][]jute.ID{{client6}, {client4, id(SchemeIP, "2001:db8:ffff:0:0:0:0:9")}},
		nomatch: [][]jute.ID{{id(SchemeIP, "2001:db9:0:0:0:0:0:1")}, {client4}},
	},
	{
		name:    "ip v6 exact",
		entry:   id(SchemeIP, "::1"),
		match:   [][]jute.ID{{id(SchemeIP, "0:0:0:0:0:0:0:1")}},
		nomatch: [][]jute.ID{{id(SchemeIP, "0:0:0:0:0:0:0:2")}, {id(SchemeIP, "127.0.0.1")}},
	},
	{
		name:    "unregistered scheme never matches",
		entry:   id(SchemeX509, "CN=a"),
		nomatch: [][]jute.ID{{id(SchemeX509, "CN=a")}},
	},
	{
		name:    "world with another id never matches",
		entry:   id(SchemeWorld, "everyone"),
		nomatch: [][]jute.ID{nil, {client4}},
	},
}

// TestAllowedMatrix checks every permission bit, granted alone and withheld
// alone, for each kind of ACL entry.
func TestAllowedMatrix(t *testing.T) {
	r := NewRegistry(Options{})
	for _, p := range principals {
		for _, bit := range permBits {
			for _, grant := range []int32{bit, jute.PermAll &^ bit} {
				acl := []jute.ACL{{Perms: grant, ID: p.entry}}
				for _, ids := range p.match {
					name := fmt.Sprintf("%s/grant=%s/want=%s/ids=%v", p.name, FormatPerms(grant), FormatPerms(bit), ids)
					if got, want := r.Allowed(acl, ids, bit), grant&bit != 0; got != want {
						t.Errorf("%s: Allowed = %v, want %v", name, got, want)
					}
				}
				for _, ids := range p.nomatch {
					if r.Allowed(acl, ids, bit) {
						t.Errorf("%s/grant=%s/want=%s: non-matching ids %v allowed", p.name, FormatPerms(grant), FormatPerms(bit), ids)
					}
				}
			}
		}
	}
}

func TestAllowedSpecialCases(t *testing.T) {
	r := NewRegistry(Options{})
	digestOnly := []jute.ACL{entry(jute.PermAll, SchemeDigest, aliceDigest)}
	tests := []struct {
		name string
		acl  []jute.ACL
		ids  []jute.ID
		perm int32
		want bool
	}{
		{"empty ACL allows anyone", nil, nil, jute.PermAdmin, true},
		{"empty non-nil ACL allows anyone", []jute.ACL{}, []jute.ID{client4}, jute.PermAll, true},
		{"super bypasses", digestOnly, []jute.ID{client4, id(SchemeSuper, "")}, jute.PermAdmin, true},
		{"super bypasses perms 0", []jute.ACL{entry(0, SchemeWorld, "anyone")}, []jute.ID{id(SchemeSuper, "")}, jute.PermRead, true},
		{"super with any id bypasses", digestOnly, []jute.ID{id(SchemeSuper, "CN=admin")}, jute.PermWrite, true},
		{"perms 0 denies everyone else", []jute.ACL{entry(0, SchemeWorld, "anyone")}, []jute.ID{client4}, jute.PermRead, false},
		{"READ|ADMIN asked, READ granted", []jute.ACL{entry(jute.PermRead, SchemeWorld, "anyone")}, nil, jute.PermRead | jute.PermAdmin, true},
		{"READ|ADMIN asked, ADMIN granted", []jute.ACL{entry(jute.PermAdmin, SchemeWorld, "anyone")}, nil, jute.PermRead | jute.PermAdmin, true},
		{"READ|ADMIN asked, WRITE granted", []jute.ACL{entry(jute.PermWrite, SchemeWorld, "anyone")}, nil, jute.PermRead | jute.PermAdmin, false},
		{"second entry grants", []jute.ACL{entry(jute.PermRead, SchemeWorld, "anyone"), entry(jute.PermWrite, SchemeIP, "10.0.0.0/8")}, []jute.ID{client4}, jute.PermWrite, true},
		{"malformed ip entry never matches", []jute.ACL{entry(jute.PermAll, SchemeIP, "10.1.2.3/40")}, []jute.ID{client4}, jute.PermRead, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Allowed(tt.acl, tt.ids, tt.perm); got != tt.want {
				t.Fatalf("Allowed = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAuthExpansionGrants checks that an ACL built from "auth" lets its
// creator in and keeps everyone else out, bit by bit.
func TestAuthExpansionGrants(t *testing.T) {
	r := NewRegistry(Options{})
	creator := []jute.ID{client4, id(SchemeDigest, aliceDigest)}
	other := []jute.ID{client4, id(SchemeDigest, Digest("bob:secret"))}
	for _, bit := range permBits {
		acl, code := r.FixupACL([]jute.ACL{entry(bit, SchemeAuth, "")}, creator)
		if code != jute.OK {
			t.Fatalf("FixupACL(auth) = %v", code)
		}
		for _, want := range permBits {
			if got := r.Allowed(acl, creator, want); got != (want == bit) {
				t.Errorf("grant %s, ask %s: creator allowed = %v", FormatPerms(bit), FormatPerms(want), got)
			}
			if r.Allowed(acl, other, want) {
				t.Errorf("grant %s, ask %s: other user allowed", FormatPerms(bit), FormatPerms(want))
			}
		}
	}
}

func TestFixupACL(t *testing.T) {
	alice := id(SchemeDigest, aliceDigest)
	bob := id(SchemeDigest, Digest("bob:pw"))
	tests := []struct {
		name string
		acl  []jute.ACL
		ids  []jute.ID
		want []jute.ACL // nil means InvalidACL
	}{
		{"world anyone", jute.OpenACLUnsafe, nil, jute.OpenACLUnsafe},
		{"nil list", nil, []jute.ID{alice}, nil},
		{"empty list", []jute.ACL{}, []jute.ID{alice}, nil},
		{"dedup keeps first and order",
			[]jute.ACL{entry(1, SchemeIP, "10.0.0.1"), entry(31, SchemeWorld, "anyone"), entry(1, SchemeIP, "10.0.0.1"), entry(2, SchemeIP, "10.0.0.1"), entry(31, SchemeWorld, "anyone")},
			nil,
			[]jute.ACL{entry(1, SchemeIP, "10.0.0.1"), entry(31, SchemeWorld, "anyone"), entry(2, SchemeIP, "10.0.0.1")}},
		{"perms not validated", []jute.ACL{entry(0, SchemeWorld, "anyone"), entry(255, SchemeIP, "1.2.3.4"), entry(-1, SchemeDigest, "a:b")}, nil,
			[]jute.ACL{entry(0, SchemeWorld, "anyone"), entry(255, SchemeIP, "1.2.3.4"), entry(-1, SchemeDigest, "a:b")}},
		{"world other id", []jute.ACL{entry(31, SchemeWorld, "everyone")}, nil, nil},
		{"world empty id", []jute.ACL{entry(31, SchemeWorld, "")}, nil, nil},
		{"world case matters", []jute.ACL{entry(31, SchemeWorld, "Anyone")}, nil, nil},
		{"digest user:hash", []jute.ACL{entry(31, SchemeDigest, aliceDigest)}, nil, []jute.ACL{entry(31, SchemeDigest, aliceDigest)}},
		{"digest no colon", []jute.ACL{entry(31, SchemeDigest, "alice")}, nil, nil},
		{"digest trailing colon", []jute.ACL{entry(31, SchemeDigest, "alice:")}, nil, nil},
		{"digest three parts", []jute.ACL{entry(31, SchemeDigest, "a:b:c")}, nil, nil},
		{"digest empty", []jute.ACL{entry(31, SchemeDigest, "")}, nil, nil},
		{"digest empty user (Java split keeps it)", []jute.ACL{entry(31, SchemeDigest, ":hash")}, nil, []jute.ACL{entry(31, SchemeDigest, ":hash")}},
		{"digest a:b: (Java split drops trailing empties)", []jute.ACL{entry(31, SchemeDigest, "a:b:")}, nil, []jute.ACL{entry(31, SchemeDigest, "a:b:")}},
		{"ip v4", []jute.ACL{entry(31, SchemeIP, "10.0.0.1")}, nil, []jute.ACL{entry(31, SchemeIP, "10.0.0.1")}},
		{"ip v4 /0 and /32", []jute.ACL{entry(1, SchemeIP, "0.0.0.0/0"), entry(2, SchemeIP, "10.0.0.1/32")}, nil, []jute.ACL{entry(1, SchemeIP, "0.0.0.0/0"), entry(2, SchemeIP, "10.0.0.1/32")}},
		{"ip v4 /33", []jute.ACL{entry(31, SchemeIP, "10.0.0.1/33")}, nil, nil},
		{"ip v4 octet 256", []jute.ACL{entry(31, SchemeIP, "10.0.0.256")}, nil, nil},
		{"ip hostname", []jute.ACL{entry(31, SchemeIP, "localhost")}, nil, nil},
		{"ip v6 cidr", []jute.ACL{entry(31, SchemeIP, "fe80::/10")}, nil, []jute.ACL{entry(31, SchemeIP, "fe80::/10")}},
		{"ip v6 /129", []jute.ACL{entry(31, SchemeIP, "::1/129")}, nil, nil},
		{"unknown scheme", []jute.ACL{entry(31, "foo", "bar")}, nil, nil},
		{"x509 unregistered by default", []jute.ACL{entry(31, SchemeX509, "CN=a")}, nil, nil},
		{"super unregistered", []jute.ACL{entry(31, SchemeSuper, "")}, []jute.ID{id(SchemeSuper, "")}, nil},
		{"sasl unregistered", []jute.ACL{entry(31, "sasl", "alice")}, nil, nil},
		{"one bad entry spoils the list", []jute.ACL{entry(31, SchemeWorld, "anyone"), entry(31, "foo", "bar")}, nil, nil},
		{"auth with one digest id", []jute.ACL{entry(31, SchemeAuth, "")}, []jute.ID{client4, alice}, []jute.ACL{{Perms: 31, ID: alice}}},
		{"auth id is ignored", []jute.ACL{entry(5, SchemeAuth, "whatever")}, []jute.ID{alice}, []jute.ACL{{Perms: 5, ID: alice}}},
		{"auth expands every authenticated id in order", []jute.ACL{entry(3, SchemeAuth, ""), entry(31, SchemeWorld, "anyone")}, []jute.ID{bob, client4, alice},
			[]jute.ACL{{Perms: 3, ID: bob}, {Perms: 3, ID: alice}, entry(31, SchemeWorld, "anyone")}},
		{"auth result is not deduplicated", []jute.ACL{{Perms: 31, ID: alice}, entry(31, SchemeAuth, "")}, []jute.ID{alice},
			[]jute.ACL{{Perms: 31, ID: alice}, {Perms: 31, ID: alice}}},
		{"auth with only ip", []jute.ACL{entry(31, SchemeAuth, "")}, []jute.ID{client4}, nil},
		{"auth with no ids", []jute.ACL{entry(31, SchemeAuth, "")}, nil, nil},
		{"auth skips super (no provider)", []jute.ACL{entry(31, SchemeAuth, "")}, []jute.ID{id(SchemeSuper, ""), client4}, nil},
	}
	r := NewRegistry(Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.acl)
			got, code := r.FixupACL(tt.acl, tt.ids)
			if tt.want == nil {
				if code != jute.InvalidACL || got != nil {
					t.Fatalf("FixupACL = %v, %v; want nil, InvalidACL", got, code)
				}
				return
			}
			if code != jute.OK || !slices.Equal(got, tt.want) {
				t.Fatalf("FixupACL = %v, %v; want %v, OK", got, code, tt.want)
			}
			if !slices.Equal(tt.acl, in) {
				t.Fatalf("FixupACL modified its input: %v", tt.acl)
			}
		})
	}
}

func TestFixupACLWithX509AndCustomProviders(t *testing.T) {
	r := NewRegistry(Options{Providers: []Provider{NewX509Provider("")}})
	cert := id(SchemeX509, "CN=client,O=Example")
	tests := []struct {
		name string
		acl  []jute.ACL
		ids  []jute.ID
		want jute.Code
	}{
		{"x509 valid DN", []jute.ACL{entry(31, SchemeX509, "CN=client,O=Example")}, nil, jute.OK},
		{"x509 bad DN", []jute.ACL{entry(31, SchemeX509, "not a dn")}, nil, jute.InvalidACL},
		{"auth with x509 id", []jute.ACL{entry(31, SchemeAuth, "")}, []jute.ID{cert}, jute.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, code := r.FixupACL(tt.acl, tt.ids); code != tt.want {
				t.Fatalf("code = %v, want %v", code, tt.want)
			}
		})
	}
}

func TestMaskForReader(t *testing.T) {
	r := NewRegistry(Options{})
	alice := id(SchemeDigest, aliceDigest)
	stored := []jute.ACL{
		entry(jute.PermRead, SchemeWorld, "anyone"),
		{Perms: jute.PermAll, ID: alice},
		entry(jute.PermRead, SchemeIP, "10.0.0.0/8"),
		entry(jute.PermRead, SchemeDigest, "odd:a:b\nnext:line"),
	}
	masked := []jute.ACL{
		entry(jute.PermRead, SchemeWorld, "anyone"),
		entry(jute.PermAll, SchemeDigest, "alice:x"),
		entry(jute.PermRead, SchemeIP, "10.0.0.0/8"),
		entry(jute.PermRead, SchemeDigest, "odd:x\nnext:x"),
	}
	tests := []struct {
		name string
		ids  []jute.ID
		want []jute.ACL
	}{
		{"reader without ADMIN sees masked digests", []jute.ID{client4}, masked},
		{"admin sees hashes", []jute.ID{client4, alice}, stored},
		{"super sees hashes", []jute.ID{id(SchemeSuper, "")}, stored},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(stored)
			if got := r.MaskForReader(stored, tt.ids); !slices.Equal(got, tt.want) {
				t.Fatalf("MaskForReader = %q, want %q", got, tt.want)
			}
			if !slices.Equal(stored, before) {
				t.Fatal("MaskForReader modified the stored ACL")
			}
		})
	}
}
