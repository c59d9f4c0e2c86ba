package tlsconf

import (
	"io"
	"net"
)

// RecordHandshake is the first byte of a TLS connection (a handshake
// record); port unification tells TLS from plaintext by it.
const RecordHandshake = 0x16

// Sniff reads the first byte of c and returns it with a connection that
// reads that byte again before the rest, so whoever reads next (a TLS
// handshake or a plaintext protocol) sees the whole stream. Only one
// goroutine may read the returned connection.
func Sniff(c net.Conn) (byte, net.Conn, error) {
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return 0, nil, err
	}
	return first[0], &PrefixConn{Conn: c, Prefix: first[:]}, nil
}

// PrefixConn replays Prefix, bytes already read from Conn, before reading
// Conn. Only one goroutine may read it.
type PrefixConn struct {
	net.Conn
	Prefix []byte
}

// Read implements net.Conn.
func (p *PrefixConn) Read(b []byte) (int, error) {
	if len(p.Prefix) > 0 {
		n := copy(b, p.Prefix)
		p.Prefix = p.Prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
