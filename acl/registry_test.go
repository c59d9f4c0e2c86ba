package acl

import (
	"errors"
	"net"
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// stubProvider is a configurable Provider for registry tests.
type stubProvider struct {
	scheme string
	ids    []jute.ID
	err    error
}

func (s *stubProvider) Scheme() string { return s.scheme }
func (s *stubProvider) Authenticate(ConnInfo, []byte) ([]jute.ID, error) {
	return s.ids, s.err
}
func (s *stubProvider) Matches(id, expr string) bool { return id == expr }
func (s *stubProvider) IsValid(string) bool          { return true }
func (s *stubProvider) IsAuthenticated() bool        { return true }

func TestRegister(t *testing.T) {
	tests := []struct {
		name    string
		p       Provider
		wantErr error
	}{
		{"new scheme", &stubProvider{scheme: "token"}, nil},
		{"duplicate built-in", DigestProvider{}, ErrDuplicateScheme},
		{"duplicate world", &stubProvider{scheme: SchemeWorld}, ErrDuplicateScheme},
		{"nil", nil, ErrInvalidProvider},
		{"empty scheme", &stubProvider{}, ErrInvalidProvider},
		{"auth is reserved", &stubProvider{scheme: SchemeAuth}, ErrInvalidProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry(Options{})
			err := r.Register(tt.p)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Register = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				if got, ok := r.Provider(tt.p.Scheme()); !ok || got != tt.p {
					t.Fatalf("Provider(%q) = %v, %v", tt.p.Scheme(), got, ok)
				}
			}
		})
	}
}

func TestRegisterTwice(t *testing.T) {
	r := NewRegistry(Options{})
	if err := r.Register(NewX509Provider("")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(NewX509Provider("")); !errors.Is(err, ErrDuplicateScheme) {
		t.Fatalf("second Register = %v, want ErrDuplicateScheme", err)
	}
}

func TestNewRegistrySchemes(t *testing.T) {
	custom := &stubProvider{scheme: SchemeDigest, ids: []jute.ID{id(SchemeDigest, "custom")}}
	r := NewRegistry(Options{Providers: []Provider{nil, &stubProvider{scheme: "token"}, custom, &stubProvider{scheme: SchemeAuth}}})
	if got, want := r.Schemes(), []string{SchemeDigest, SchemeIP, "token", SchemeWorld}; !slices.Equal(got, want) {
		t.Fatalf("Schemes = %v, want %v", got, want)
	}
	if p, _ := r.Provider(SchemeDigest); p != Provider(custom) {
		t.Fatalf("Options.Providers did not override digest: %v", p)
	}
	if got := NewRegistry(Options{}).Schemes(); !slices.Equal(got, []string{SchemeDigest, SchemeIP, SchemeWorld}) {
		t.Fatalf("default Schemes = %v", got)
	}
}

func TestRegistryAuthenticate(t *testing.T) {
	superDigest := Digest("super:test")
	conn := ConnInfo{RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}}
	r := NewRegistry(Options{SuperDigest: superDigest, Providers: []Provider{
		&stubProvider{scheme: "dups", ids: []jute.ID{id("dups", "a"), id("dups", "a"), id("dups", "b")}},
		&stubProvider{scheme: "empty"},
		&stubProvider{scheme: "fails", err: ErrAuthFailed},
	}})
	tests := []struct {
		name    string
		scheme  string
		auth    string
		want    []jute.ID
		wantErr error
	}{
		{"digest", SchemeDigest, "alice:secret", []jute.ID{id(SchemeDigest, aliceDigest)}, nil},
		{"super digest", SchemeDigest, "super:test", []jute.ID{id(SchemeSuper, ""), id(SchemeDigest, superDigest)}, nil},
		{"wrong super password", SchemeDigest, "super:nope", []jute.ID{id(SchemeDigest, Digest("super:nope"))}, nil},
		{"ip restates the address", SchemeIP, "ignored", []jute.ID{id(SchemeIP, "127.0.0.1")}, nil},
		{"duplicates removed", "dups", "", []jute.ID{id("dups", "a"), id("dups", "b")}, nil},
		{"unknown scheme", "sasl", "x", nil, ErrUnknownScheme},
		{"super is not a scheme", SchemeSuper, "test", nil, ErrUnknownScheme},
		{"x509 not registered", SchemeX509, "", nil, ErrUnknownScheme},
		{"world cannot authenticate", SchemeWorld, "anyone", nil, ErrAuthFailed},
		{"provider error", "fails", "", nil, ErrAuthFailed},
		{"provider with no ids", "empty", "", nil, ErrAuthFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Authenticate(tt.scheme, conn, []byte(tt.auth))
			if tt.wantErr != nil {
				var code jute.Code
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &code) || code != jute.AuthFailed {
					t.Fatalf("err = %v, want %v wrapping AuthFailed", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Authenticate = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestRegistryIPAuthWithoutAddress(t *testing.T) {
	_, err := NewRegistry(Options{}).Authenticate(SchemeIP, ConnInfo{}, nil)
	if !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("err = %v, want ErrAuthFailed", err)
	}
}

func TestClientInfo(t *testing.T) {
	r := NewRegistry(Options{Providers: []Provider{NewX509Provider("")}})
	ids := []jute.ID{id(SchemeIP, "127.0.0.1"), id(SchemeDigest, aliceDigest), id(SchemeSuper, ""), id(SchemeX509, "CN=c"), id("gone", "x")}
	want := []jute.ClientInfo{
		{AuthScheme: SchemeIP, User: "127.0.0.1"},
		{AuthScheme: SchemeDigest, User: "alice"},
		{AuthScheme: SchemeSuper, User: ""},
		{AuthScheme: SchemeX509, User: "CN=c"},
		{AuthScheme: "gone", User: ""},
	}
	if got := r.ClientInfo(ids); !slices.Equal(got, want) {
		t.Fatalf("ClientInfo = %v, want %v", got, want)
	}
}

func TestPerms(t *testing.T) {
	tests := []struct {
		s     string
		perms int32
		canon string
	}{
		{"", 0, ""},
		{"r", jute.PermRead, "r"},
		{"cdrwa", jute.PermAll, "cdrwa"},
		{"arwdc", jute.PermAll, "cdrwa"},
		{"rr", jute.PermRead, "r"},
		{"wa", jute.PermWrite | jute.PermAdmin, "wa"},
		{"cd", jute.PermCreate | jute.PermDelete, "cd"},
	}
	for _, tt := range tests {
		got, err := ParsePerms(tt.s)
		if err != nil || got != tt.perms {
			t.Errorf("ParsePerms(%q) = %d, %v; want %d", tt.s, got, err, tt.perms)
		}
		if s := FormatPerms(tt.perms); s != tt.canon {
			t.Errorf("FormatPerms(%d) = %q, want %q", tt.perms, s, tt.canon)
		}
	}
	for _, bad := range []string{"x", "R", "rwx", " r"} {
		if _, err := ParsePerms(bad); !errors.Is(err, ErrBadPerms) {
			t.Errorf("ParsePerms(%q) err = %v, want ErrBadPerms", bad, err)
		}
	}
	if got := FormatPerms(255); got != "cdrwa" {
		t.Errorf("FormatPerms(255) = %q, want cdrwa", got)
	}
}

func TestJavaHelpers(t *testing.T) {
	ints := []struct {
		s     string
		radix int
		want  int32
		ok    bool
	}{
		{"0", 10, 0, true}, {"+7", 10, 7, true}, {"-7", 10, -7, true}, {"007", 10, 7, true},
		{"2147483647", 10, 2147483647, true}, {"-2147483648", 10, -2147483648, true},
		{"2147483648", 10, 0, false}, {"99999999999999999999", 10, 0, false},
		{"", 10, 0, false}, {"+", 10, 0, false}, {"-", 16, 0, false}, {"1a", 10, 0, false},
		{"ffff", 16, 0xffff, true}, {"FfFf", 16, 0xffff, true}, {"g", 16, 0, false}, {" 1", 10, 0, false},
	}
	for _, tt := range ints {
		if got, ok := javaParseInt(tt.s, tt.radix); got != tt.want || ok != tt.ok {
			t.Errorf("javaParseInt(%q, %d) = %d, %v; want %d, %v", tt.s, tt.radix, got, ok, tt.want, tt.ok)
		}
	}
	splits := map[string][]string{
		"": {""}, "a": {"a"}, ":": {}, "a:": {"a"}, ":a": {"", "a"}, "a::b": {"a", "", "b"}, "a:b::": {"a", "b"},
	}
	for in, want := range splits {
		if got := javaSplit(in, ":"); !slices.Equal(got, want) {
			t.Errorf("javaSplit(%q) = %q, want %q", in, got, want)
		}
	}
	masks := map[string]string{
		"alice:hash": "alice:x", "a:b:c": "a:x", "nocolon": "nocolon", "": "", ":": ":x",
		"a:b\nc:d": "a:x\nc:x", "a:b\r\nc": "a:x\r\nc", "a:b\u2028c": "a:x\u2028c", "a:\xff": "a:x", "\xff:b": "\xff:x",
	}
	for in, want := range masks {
		if got := javaReplaceColonTail(in); got != want {
			t.Errorf("javaReplaceColonTail(%q) = %q, want %q", in, got, want)
		}
	}
}
