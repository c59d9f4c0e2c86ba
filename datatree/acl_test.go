package datatree

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func aclEntry(perms int32, scheme, id string) jute.ACL {
	return jute.ACL{Perms: perms, ID: jute.ID{Scheme: scheme, ID: id}}
}

// The tree without an Authorizer validates ACL lists with package acl's
// built-in schemes; these cases pin the behaviour the tree relies on.
func TestBuiltinFixupACL(t *testing.T) {
	ipID := jute.ID{Scheme: "ip", ID: "127.0.0.1"}
	carol := jute.ID{Scheme: "x509", ID: "CN=carol"}
	tests := []struct {
		name string
		in   []jute.ACL
		ids  []jute.ID
		want []jute.ACL
		code jute.Code
	}{
		{"nil", nil, nil, nil, jute.InvalidACL},
		{"empty", []jute.ACL{}, nil, nil, jute.InvalidACL},
		{"open", open, nil, open, jute.OK},
		{"world other id", []jute.ACL{aclEntry(31, "world", "someone")}, nil, nil, jute.InvalidACL},
		{"perms not validated", []jute.ACL{aclEntry(0, "world", "anyone"), aclEntry(255, "world", "anyone")}, nil,
			[]jute.ACL{aclEntry(0, "world", "anyone"), aclEntry(255, "world", "anyone")}, jute.OK},
		{"dedup keeps order", []jute.ACL{aclEntry(1, "world", "anyone"), aclEntry(31, "world", "anyone"), aclEntry(1, "world", "anyone")}, nil,
			[]jute.ACL{aclEntry(1, "world", "anyone"), aclEntry(31, "world", "anyone")}, jute.OK},
		{"auth without ids", jute.CreatorAllACL, nil, nil, jute.InvalidACL},
		{"auth with only ip", jute.CreatorAllACL, []jute.ID{ipID}, nil, jute.InvalidACL},
		{"auth with super only", jute.CreatorAllACL, []jute.ID{{Scheme: "super"}}, nil, jute.InvalidACL},
		{"auth expands in id order", []jute.ACL{aclEntry(1, "world", "anyone"), aclEntry(5, "auth", "ignored"), aclEntry(2, "ip", "10.0.0.0/8")},
			[]jute.ID{ipID, alice, carol},
			// x509 is not a registered scheme here, so carol does not expand.
			[]jute.ACL{aclEntry(1, "world", "anyone"), {Perms: 5, ID: alice}, aclEntry(2, "ip", "10.0.0.0/8")}, jute.OK},
		{"digest ok", aliceA, nil, aliceA, jute.OK},
		{"digest no colon", []jute.ACL{aclEntry(31, "digest", "alice")}, nil, nil, jute.InvalidACL},
		{"digest empty hash", []jute.ACL{aclEntry(31, "digest", "alice:")}, nil, nil, jute.InvalidACL},
		{"digest three parts", []jute.ACL{aclEntry(31, "digest", "a:b:c")}, nil, nil, jute.InvalidACL},
		{"digest empty user", []jute.ACL{aclEntry(31, "digest", ":h")}, nil, []jute.ACL{aclEntry(31, "digest", ":h")}, jute.OK},
		{"ip v4", []jute.ACL{aclEntry(31, "ip", "1.2.3.4")}, nil, []jute.ACL{aclEntry(31, "ip", "1.2.3.4")}, jute.OK},
		{"ip cidr", []jute.ACL{aclEntry(31, "ip", "10.1.0.0/16")}, nil, []jute.ACL{aclEntry(31, "ip", "10.1.0.0/16")}, jute.OK},
		{"ip bad", []jute.ACL{aclEntry(31, "ip", "1.2.3")}, nil, nil, jute.InvalidACL},
		{"ip hostname", []jute.ACL{aclEntry(31, "ip", "localhost")}, nil, nil, jute.InvalidACL},
		{"unknown scheme", []jute.ACL{aclEntry(31, "sasl", "bob")}, nil, nil, jute.InvalidACL},
		{"super scheme", []jute.ACL{aclEntry(31, "super", "")}, nil, nil, jute.InvalidACL},
		{"one bad entry", []jute.ACL{aclEntry(31, "world", "anyone"), aclEntry(31, "foo", "x")}, nil, nil, jute.InvalidACL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code := New(Config{}).fixupACL(tt.in, tt.ids)
			if code != tt.code {
				t.Fatalf("code = %v, want %v", code, tt.code)
			}
			if code == jute.OK && !slices.Equal(got, tt.want) {
				t.Errorf("acl = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBuiltinFixupACLLargeListDedup(t *testing.T) {
	var in []jute.ACL
	for i := 0; i < 100; i++ {
		in = append(in, aclEntry(int32(i%40), "world", "anyone"))
	}
	got, code := New(Config{}).fixupACL(in, nil)
	if code != jute.OK || len(got) != 40 || got[39].Perms != 39 {
		t.Fatalf("got %d entries, code %v", len(got), code)
	}
}

func TestMaskDigest(t *testing.T) {
	tests := map[string]string{
		"alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=": "alice:x",
		"alice:":                             "alice:x",
		":h":                                 ":x",
		"nocolon":                            "nocolon",
		"a:b\nc":                             "a:x\nc",
		"a:b\n:c":                            "a:x\n:x",
		"a:b\r\nc:d":                         "a:x\r\nc:x",
	}
	for in, want := range tests {
		if got := maskDigest(in); got != want {
			t.Errorf("maskDigest(%q) = %q, want %q", in, got, want)
		}
	}
	masked := maskDigestIDs([]jute.ACL{{Perms: 1, ID: alice}, aclEntry(31, "world", "anyone")})
	want := []jute.ACL{aclEntry(1, "digest", "alice:x"), aclEntry(31, "world", "anyone")}
	if !slices.Equal(masked, want) {
		t.Errorf("maskDigestIDs = %v", masked)
	}
}

func TestACLCacheRefcounts(t *testing.T) {
	h := newHarness(t, Config{})
	base := h.tree.acls.size()
	for i := 0; i < 10; i++ {
		h.createACL("/n"+string(rune('a'+i)), []jute.ACL{aclEntry(int32(i+2), "world", "anyone")})
	}
	if got := h.tree.acls.size(); got != base+10 {
		t.Fatalf("cache size %d, want %d", got, base+10)
	}
	h.createACL("/shared", []jute.ACL{aclEntry(2, "world", "anyone")})
	if got := h.tree.acls.size(); got != base+10 {
		t.Fatalf("shared list was not interned: size %d", got)
	}
	for i := 0; i < 10; i++ {
		if r := h.apply(jute.OpDelete, &jute.DeleteRequest{Path: "/n" + string(rune('a'+i)), Version: -1}); r.Err != jute.OK {
			t.Fatal(r.Err)
		}
	}
	if got := h.tree.acls.size(); got != base+1 {
		t.Fatalf("after deletes cache size %d, want %d", got, base+1)
	}
	// setACL replaces the reference; freed slots are reused.
	r := h.apply(jute.OpSetACL, &jute.SetACLRequest{Path: "/shared", ACL: aliceA, Version: -1})
	if r.Err != jute.OK {
		t.Fatal(r.Err)
	}
	if got := h.tree.acls.size(); got != base+1 {
		t.Fatalf("after setACL cache size %d, want %d", got, base+1)
	}
	if got, _, _ := h.tree.GetACL("/shared", nil); !slices.Equal(got, aliceA) {
		t.Fatalf("GetACL = %v", got)
	}
	if len(h.tree.acls.lists) > base+10 {
		t.Errorf("slots not reused: %d", len(h.tree.acls.lists))
	}
}
