package datatree

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func acl(perms int32, scheme, id string) jute.ACL {
	return jute.ACL{Perms: perms, ID: jute.ID{Scheme: scheme, ID: id}}
}

func TestDefaultFixupACL(t *testing.T) {
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
		{"world other id", []jute.ACL{acl(31, "world", "someone")}, nil, nil, jute.InvalidACL},
		{"perms not validated", []jute.ACL{acl(0, "world", "anyone"), acl(255, "world", "anyone")}, nil,
			[]jute.ACL{acl(0, "world", "anyone"), acl(255, "world", "anyone")}, jute.OK},
		{"dedup keeps order", []jute.ACL{acl(1, "world", "anyone"), acl(31, "world", "anyone"), acl(1, "world", "anyone")}, nil,
			[]jute.ACL{acl(1, "world", "anyone"), acl(31, "world", "anyone")}, jute.OK},
		{"auth without ids", jute.CreatorAllACL, nil, nil, jute.InvalidACL},
		{"auth with only ip", jute.CreatorAllACL, []jute.ID{ipID}, nil, jute.InvalidACL},
		{"auth with super only", jute.CreatorAllACL, []jute.ID{{Scheme: "super"}}, nil, jute.InvalidACL},
		{"auth expands in id order", []jute.ACL{acl(1, "world", "anyone"), acl(5, "auth", "ignored"), acl(2, "ip", "10.0.0.0/8")},
			[]jute.ID{ipID, alice, carol},
			[]jute.ACL{acl(1, "world", "anyone"), {Perms: 5, ID: alice}, {Perms: 5, ID: carol}, acl(2, "ip", "10.0.0.0/8")}, jute.OK},
		{"digest ok", aliceA, nil, aliceA, jute.OK},
		{"digest no colon", []jute.ACL{acl(31, "digest", "alice")}, nil, nil, jute.InvalidACL},
		{"digest empty hash", []jute.ACL{acl(31, "digest", "alice:")}, nil, nil, jute.InvalidACL},
		{"digest three parts", []jute.ACL{acl(31, "digest", "a:b:c")}, nil, nil, jute.InvalidACL},
		{"digest empty user", []jute.ACL{acl(31, "digest", ":h")}, nil, []jute.ACL{acl(31, "digest", ":h")}, jute.OK},
		{"ip v4", []jute.ACL{acl(31, "ip", "1.2.3.4")}, nil, []jute.ACL{acl(31, "ip", "1.2.3.4")}, jute.OK},
		{"ip cidr", []jute.ACL{acl(31, "ip", "10.1.0.0/16")}, nil, []jute.ACL{acl(31, "ip", "10.1.0.0/16")}, jute.OK},
		{"ip bad", []jute.ACL{acl(31, "ip", "1.2.3")}, nil, nil, jute.InvalidACL},
		{"ip hostname", []jute.ACL{acl(31, "ip", "localhost")}, nil, nil, jute.InvalidACL},
		{"unknown scheme", []jute.ACL{acl(31, "sasl", "bob")}, nil, nil, jute.InvalidACL},
		{"super scheme", []jute.ACL{acl(31, "super", "")}, nil, nil, jute.InvalidACL},
		{"one bad entry", []jute.ACL{acl(31, "world", "anyone"), acl(31, "foo", "x")}, nil, nil, jute.InvalidACL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, code := defaultFixupACL(tt.in, tt.ids)
			if code != tt.code {
				t.Fatalf("code = %v, want %v", code, tt.code)
			}
			if code == jute.OK && !slices.Equal(got, tt.want) {
				t.Errorf("acl = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDefaultFixupACLLargeListDedup(t *testing.T) {
	var in []jute.ACL
	for i := 0; i < 100; i++ {
		in = append(in, acl(int32(i%40), "world", "anyone"))
	}
	got, code := defaultFixupACL(in, nil)
	if code != jute.OK || len(got) != 40 || got[39].Perms != 39 {
		t.Fatalf("got %d entries, code %v", len(got), code)
	}
}

func TestValidDigestID(t *testing.T) {
	tests := map[string]bool{
		"alice:hash": true, ":hash": true, "a:b:": true, "a:b::": true,
		"": false, "alice": false, "alice:": false, "a:b:c": false, ":": false, "::b": false,
	}
	for id, want := range tests {
		if got := validDigestID(id); got != want {
			t.Errorf("validDigestID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestValidIPID(t *testing.T) {
	tests := map[string]bool{
		"127.0.0.1": true, "0.0.0.0/0": true, "10.0.0.0/32": true, "+1.-0.01.255": true,
		"10.0.0.0/33": false, "10.0.0.0/-1": false, "10.0.0.0/": false, "10.0.0.0/8/9": false,
		"256.0.0.1": false, "1.2.3": false, "1.2.3.4.5": false, "1..2.3": false, "a.b.c.d": false,
		"": false, "abc": false,
		"::1": true, "fe80::": true, "::": true, ":::": false, "1:2:3:4:5:6:7:8": true, "1:2:3:4:5:6:7": false,
		"1::2::3": false, "::1/128": true, "::1/129": false, "12345::": false, "g::": false,
		"1:2:3:4::5:6:7:8": false, "::ffff:1.2.3.4": false,
	}
	for id, want := range tests {
		if got := validIPID(id); got != want {
			t.Errorf("validIPID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestJavaParseInt(t *testing.T) {
	tests := []struct {
		s    string
		base int32
		v    int32
		ok   bool
	}{
		{"0", 10, 0, true}, {"-0", 10, 0, true}, {"+7", 10, 7, true}, {"007", 10, 7, true},
		{"2147483647", 10, 2147483647, true}, {"-2147483648", 10, -2147483648, true},
		{"2147483648", 10, 0, false}, {"", 10, 0, false}, {"-", 10, 0, false}, {"1a", 10, 0, false},
		{"ffff", 16, 0xffff, true}, {"FfFf", 16, 0xffff, true}, {"-1", 16, -1, true}, {"g", 16, 0, false},
	}
	for _, tt := range tests {
		v, ok := javaParseInt(tt.s, tt.base)
		if v != tt.v || ok != tt.ok {
			t.Errorf("javaParseInt(%q, %d) = %d, %v", tt.s, tt.base, v, ok)
		}
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
	masked := maskDigestIDs([]jute.ACL{{Perms: 1, ID: alice}, acl(31, "world", "anyone")})
	want := []jute.ACL{acl(1, "digest", "alice:x"), acl(31, "world", "anyone")}
	if !slices.Equal(masked, want) {
		t.Errorf("maskDigestIDs = %v", masked)
	}
}

func TestACLCacheRefcounts(t *testing.T) {
	h := newHarness(t, Config{})
	base := h.tree.acls.size()
	for i := 0; i < 10; i++ {
		h.createACL("/n"+string(rune('a'+i)), []jute.ACL{acl(int32(i+2), "world", "anyone")})
	}
	if got := h.tree.acls.size(); got != base+10 {
		t.Fatalf("cache size %d, want %d", got, base+10)
	}
	h.createACL("/shared", []jute.ACL{acl(2, "world", "anyone")})
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
