package acl

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// IPProvider is the ip scheme. A connection's id is its remote address as
// Java prints it; an ACL id is an address, optionally followed by "/bits",
// for IPv4 ("10.0.0.0/8") or IPv6 ("fe80::/10", "0:0:0:0:0:0:0:1"). The
// parser is ZooKeeper 3.9's: IPv4 needs four decimal parts of 0..255; IPv6
// needs colon-separated groups of at most four hex digits with at most one
// "::" (which must stand for at least one group), and has no embedded-IPv4 or
// "%zone" form. Like Java's Integer.parseInt, a number may carry a leading
// '+' or '-'. A malformed ACL id never matches.
type IPProvider struct{}

var _ Provider = IPProvider{}

// Scheme implements Provider.
func (IPProvider) Scheme() string { return SchemeIP }

// Authenticate implements Provider: it (re)states the connection's address.
func (IPProvider) Authenticate(conn ConnInfo, _ []byte) ([]jute.ID, error) {
	ids := ConnIDs(conn.RemoteAddr)
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no remote IP address", ErrAuthFailed)
	}
	return ids, nil
}

// Matches implements Provider: the first bits of id and aclExpr are equal
// (all of them without "/bits"), and both are the same address family.
func (IPProvider) Matches(id, aclExpr string) bool {
	acl, bits, ok := parseIPExpr(aclExpr)
	if !ok {
		return false
	}
	remote := parseIPAddr(id)
	if remote == nil || len(remote) != len(acl) {
		return false
	}
	maskBits(acl, bits)
	maskBits(remote, bits)
	return string(acl) == string(remote)
}

// IsValid implements Provider.
func (IPProvider) IsValid(id string) bool {
	_, _, ok := parseIPExpr(id)
	return ok
}

// IsAuthenticated implements Provider: addresses do not count for "auth".
func (IPProvider) IsAuthenticated() bool { return false }

// parseIPExpr parses "addr" or "addr/bits" into the address bytes (4 or 16)
// and the prefix length.
func parseIPExpr(expr string) ([]byte, int, bool) {
	addrPart, bitsPart, hasBits := strings.Cut(expr, "/")
	addr := parseIPAddr(addrPart)
	if addr == nil {
		return nil, 0, false
	}
	bits := len(addr) * 8
	if hasBits {
		n, ok := javaParseInt(bitsPart, 10)
		if !ok || n < 0 || int(n) > len(addr)*8 {
			return nil, 0, false
		}
		bits = int(n)
	}
	return addr, bits, true
}

// parseIPAddr parses an address: IPv6 if it has a ':', else IPv4 if it has a
// '.', else nothing. It returns nil when malformed.
func parseIPAddr(s string) []byte {
	switch {
	case strings.Contains(s, ":"):
		return parseIPv6(s)
	case strings.Contains(s, "."):
		return parseIPv4(s)
	}
	return nil
}

// parseIPv4 parses exactly four '.'-separated integers in 0..255.
func parseIPv4(s string) []byte {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, ok := javaParseInt(p, 10)
		if !ok || v < 0 || v > 255 {
			return nil
		}
		b[i] = byte(v)
	}
	return b
}

// parseIPv6 parses eight groups, or fewer around a single "::" that stands
// for at least one zero group.
func parseIPv6(s string) []byte {
	halves := strings.Split(s, "::")
	var head, tail []string
	switch len(halves) {
	case 1:
		head = strings.Split(s, ":")
		if len(head) != 8 {
			return nil
		}
	case 2:
		if halves[0] != "" {
			head = strings.Split(halves[0], ":")
		}
		if halves[1] != "" {
			tail = strings.Split(halves[1], ":")
		}
		if len(head)+len(tail) >= 8 {
			return nil
		}
	default:
		return nil
	}
	b := make([]byte, 16)
	if !putV6Groups(b[:2*len(head)], head) || !putV6Groups(b[16-2*len(tail):], tail) {
		return nil
	}
	return b
}

// putV6Groups writes each group's 16 bits into dst (two bytes per group).
// Like Java's (byte) casts, a negative group keeps its low 16 bits.
func putV6Groups(dst []byte, groups []string) bool {
	for i, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		v, ok := javaParseInt(g, 16)
		if !ok {
			return false
		}
		dst[2*i] = byte(v >> 8)
		dst[2*i+1] = byte(v)
	}
	return true
}

// maskBits clears every bit of b after the first bits.
func maskBits(b []byte, bits int) {
	for i := range b {
		switch {
		case bits >= 8*(i+1):
		case bits <= 8*i:
			b[i] = 0
		default:
			b[i] &^= 0xFF >> (bits - 8*i)
		}
	}
}

// ConnIDs returns the identities a connection starts with: ip:<address>,
// the address printed as Java's InetAddress.getHostAddress does ("127.0.0.1";
// IPv6 as eight lowercase hex groups without zero compression,
// "0:0:0:0:0:0:0:1", plus "%zone" when the address has one; IPv4-mapped IPv6
// addresses print as IPv4). It returns nil when the address has no IP.
func ConnIDs(remote net.Addr) []jute.ID {
	ip, zone := addrIP(remote)
	if ip == nil {
		return nil
	}
	return []jute.ID{{Scheme: SchemeIP, ID: javaHostAddress(ip, zone)}}
}

// addrIP extracts the IP and zone of an address.
func addrIP(a net.Addr) (net.IP, string) {
	switch a := a.(type) {
	case nil:
		return nil, ""
	case *net.TCPAddr:
		return a.IP, a.Zone
	case *net.UDPAddr:
		return a.IP, a.Zone
	case *net.IPAddr:
		return a.IP, a.Zone
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		host = a.String()
	}
	host, zone, _ := strings.Cut(host, "%")
	return net.ParseIP(host), zone
}

// javaHostAddress prints ip as Java's getHostAddress does.
func javaHostAddress(ip net.IP, zone string) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	var b strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.FormatUint(uint64(ip[i])<<8|uint64(ip[i+1]), 16))
	}
	if zone != "" {
		b.WriteString("%" + zone)
	}
	return b.String()
}
