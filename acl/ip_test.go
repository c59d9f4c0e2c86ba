package acl

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

func TestIPIsValid(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"127.0.0.1", true},
		{"10.0.0.0/8", true},
		{"0.0.0.0/0", true},
		{"255.255.255.255/32", true},
		{"10.0.0.1/33", false},
		{"10.0.0.1/-1", false},
		{"10.0.0.1/", false},
		{"10.0.0.1/8/8", false},
		{"10.0.0.1/ 8", false},
		{"10.0.0", false},
		{"10.0.0.1.", false},
		{"10.0..1", false},
		{"10.0.0.256", false},
		{"010.0.0.1", true},   // Integer.parseInt("010") == 10
		{"+10.0.0.1", true},   // and accepts a sign
		{"-0.0.0.0/+8", true}, // "-0" is 0
		{"10.0.0.x", false},   // not a number
		{"2147483648.0.0.0", false},
		{"localhost", false},
		{"", false},
		{"/8", false},
		{"::", true},
		{"::1", true},
		{"::1/128", true},
		{"::1/129", false},
		{"fe80::/10", true},
		{"2001:db8::1:0:0:1", true},
		{"2001:DB8:0:0:0:0:0:1", true},
		{"1:2:3:4:5:6:7:8", true},
		{"1:2:3:4:5:6:7", false},
		{"1:2:3:4:5:6:7:8:9", false},
		{"1:2:3:4:5:6:7::", true},    // seven groups around "::"
		{"1:2:3:4:5:6:7:8::", false}, // "::" must stand for a group
		{"1::2::3", false},
		{":::", false},
		{"1:", false},
		{"12345::", false},
		{"g::", false},
		{"-1::", true},             // parseInt("-1", 16), kept as 0xffff
		{"::ffff:10.0.0.1", false}, // no embedded IPv4
		{"fe80::1%eth0", false},    // no zone
		{"[::1]", false},
	}
	for _, tt := range tests {
		if got := (IPProvider{}).IsValid(tt.id); got != tt.want {
			t.Errorf("IsValid(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

func TestIPMatches(t *testing.T) {
	tests := []struct {
		id, expr string
		want     bool
	}{
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"10.1.2.3", "10.1.0.0/16", true},
		{"10.1.2.3", "10.1.2.3/16", true}, // the expression is masked too
		{"10.2.2.3", "10.1.0.0/16", false},
		{"10.1.2.3", "10.1.2.0/23", true},
		{"10.1.4.3", "10.1.2.0/23", false},
		{"10.1.2.3", "10.1.2.2/31", true},
		{"10.1.2.3", "0.0.0.0/0", true},
		{"0:0:0:0:0:0:0:1", "0.0.0.0/0", false}, // families differ
		{"10.1.2.3", "::/0", false},
		{"0:0:0:0:0:0:0:1", "::1", true},
		{"0:0:0:0:0:0:0:1", "::/0", true},
		{"fe80:0:0:0:1:2:3:4", "fe80::/10", true},
		{"febf:0:0:0:0:0:0:1", "fe80::/10", true},
		{"fec0:0:0:0:0:0:0:1", "fe80::/10", false},
		{"2001:db8:0:0:0:0:0:1", "2001:0db8::1", true},
		{"fe80:0:0:0:0:0:0:1%eth0", "fe80::/10", false}, // Java cannot parse a zone
		{"10.1.2.3", "10.1.2.3/33", false},
		{"10.1.2.3", "garbage", false},
		{"garbage", "10.1.2.3", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := (IPProvider{}).Matches(tt.id, tt.expr); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.id, tt.expr, got, tt.want)
		}
	}
}

// TestIPv6AgreesWithNetParseIP cross-checks the Java-style parser against
// the standard library on plain hex-and-colon addresses.
func TestIPv6AgreesWithNetParseIP(t *testing.T) {
	for _, s := range []string{"::", "::1", "1::", "fe80::1:2", "2001:db8:85a3::8a2e:370:7334", "1:2:3:4:5:6:7:8", "1:0:0:0:0:0:0:8", "ffff::ffff"} {
		got := parseIPv6(s)
		want := net.ParseIP(s).To16()
		if !slices.Equal(got, []byte(want)) {
			t.Errorf("parseIPv6(%q) = %v, net.ParseIP = %v", s, got, want)
		}
	}
}

func TestConnIDs(t *testing.T) {
	tests := []struct {
		name string
		addr net.Addr
		want []jute.ID
	}{
		{"ipv4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}, []jute.ID{id(SchemeIP, "127.0.0.1")}},
		{"ipv4 in 4 bytes", &net.TCPAddr{IP: net.IP{10, 0, 0, 9}}, []jute.ID{id(SchemeIP, "10.0.0.9")}},
		{"ipv6 loopback", &net.TCPAddr{IP: net.IPv6loopback}, []jute.ID{id(SchemeIP, "0:0:0:0:0:0:0:1")}},
		{"ipv6 no compression, no leading zeros", &net.TCPAddr{IP: net.ParseIP("2001:db8::0a:1")}, []jute.ID{id(SchemeIP, "2001:db8:0:0:0:0:a:1")}},
		{"ipv6 zone", &net.TCPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, []jute.ID{id(SchemeIP, "fe80:0:0:0:0:0:0:1%eth0")}},
		{"ipv4-mapped prints as ipv4", &net.TCPAddr{IP: net.ParseIP("::ffff:192.168.1.2")}, []jute.ID{id(SchemeIP, "192.168.1.2")}},
		{"udp", &net.UDPAddr{IP: net.IPv4(1, 2, 3, 4)}, []jute.ID{id(SchemeIP, "1.2.3.4")}},
		{"other addr type with host:port", fakeAddr("[::1]:2181"), []jute.ID{id(SchemeIP, "0:0:0:0:0:0:0:1")}},
		{"other addr type without ip", fakeAddr("/tmp/zk.sock"), nil},
		{"nil", nil, nil},
		{"nil TCPAddr IP", &net.TCPAddr{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConnIDs(tt.addr); !slices.Equal(got, tt.want) {
				t.Fatalf("ConnIDs = %v, want %v", got, tt.want)
			}
		})
	}
}

// fakeAddr is a net.Addr of an unknown type.
type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }

// TestConnIDsMatchOwnACL checks that a connection's ip id satisfies an ACL
// naming its address, in both families.
func TestConnIDsMatchOwnACL(t *testing.T) {
	for _, ip := range []string{"192.0.2.7", "2001:db8::7", "::1"} {
		ids := ConnIDs(&net.TCPAddr{IP: net.ParseIP(ip)})
		if len(ids) != 1 || !(IPProvider{}).Matches(ids[0].ID, ip) {
			t.Errorf("ConnIDs(%s) = %v does not match ACL %q", ip, ids, ip)
		}
	}
}

// FuzzIPProvider checks that parsing never panics and that every valid
// expression matches its own address part.
func FuzzIPProvider(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "10.0.0.0/8", "::1/128", "fe80::/10", "1::2::3", "+1.-0.2.3/+0", "::ffff:1.2.3.4", "1.2.3.4/", "-1::/", "ffff:" + strings.Repeat("f:", 7)} {
		f.Add(s, "10.0.0.1")
	}
	f.Fuzz(func(t *testing.T, expr, remote string) {
		p := IPProvider{}
		p.Matches(remote, expr)
		if !p.IsValid(expr) {
			if p.Matches(remote, expr) {
				t.Fatalf("invalid expression %q matched %q", expr, remote)
			}
			return
		}
		addr, _, _ := strings.Cut(expr, "/")
		if !p.Matches(addr, expr) {
			t.Fatalf("valid expression %q does not match its own address %q", expr, addr)
		}
	})
}
