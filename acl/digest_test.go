package acl

import (
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// Expected values were computed independently with Python hashlib.
func TestDigest(t *testing.T) {
	tests := []struct{ in, want string }{
		{"alice:secret", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="}, // as ZooKeeper 3.8 computes it
		{"super:test", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="},
		{"nocolon", "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g="},
		{"a:b:c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="},
		{"", ":2jmj7l5rSw0yVb/vlWAYkK/YBwk="},
	}
	for _, tt := range tests {
		if got := Digest(tt.in); got != tt.want {
			t.Errorf("Digest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDigestAuthenticate(t *testing.T) {
	tests := []struct {
		name string
		auth []byte
		want string
	}{
		{"plain", []byte("alice:secret"), "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="},
		{"empty always succeeds", nil, Digest("")},
		// Java's new String(bytes) turns the invalid byte into U+FFFD first.
		{"invalid utf-8", []byte("bob:\xffpw"), Digest("bob:\uFFFDpw")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, err := DigestProvider{}.Authenticate(ConnInfo{}, tt.auth)
			want := []jute.ID{id(SchemeDigest, tt.want)}
			if err != nil || !slices.Equal(ids, want) {
				t.Fatalf("Authenticate = %v, %v; want %v", ids, err, want)
			}
		})
	}
}

func TestDigestIsValidAndUserName(t *testing.T) {
	valid := map[string]bool{
		"alice:hash": true, ":hash": true, "a:b:": true, "a:b::": true,
		"alice": false, "alice:": false, "a:b:c": false, "": false, ":": false, "::": false, "a::b": false,
	}
	for in, want := range valid {
		if got := (DigestProvider{}).IsValid(in); got != want {
			t.Errorf("IsValid(%q) = %v, want %v", in, got, want)
		}
	}
	if got := (DigestProvider{}).UserName(aliceDigest); got != "alice" {
		t.Errorf("UserName = %q, want alice", got)
	}
}
