package zab

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
)

// FuzzReadPacket: any bytes give packets or an error, never a panic or an
// allocation past the limits, and what decodes re-encodes to the bytes
// it came from (but for a null authinfo string, which reads as "") and
// decodes again to the same packet.
func FuzzReadPacket(f *testing.F) {
	for _, name := range []string{"observerinfo", "request", "ping", "ackepoch"} {
		f.Add(golden(f, name))
	}
	f.Add([]byte{0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxData: 1 << 16, MaxAuth: 8, MaxString: 256}
		br := bytes.NewReader(b)
		r := bufio.NewReader(br)
		for range 16 {
			start := len(b) - br.Len() - r.Buffered()
			p, err := ReadPacket(r, lim)
			if err != nil {
				return
			}
			if len(p.Data) > lim.MaxData || len(p.AuthInfo) > lim.MaxAuth {
				t.Fatalf("limits passed: %d data, %d auth", len(p.Data), len(p.AuthInfo))
			}
			enc := EncodePacket(p)
			again, err := DecodePacket(enc, lim)
			if err != nil || !reflect.DeepEqual(again, p) {
				t.Fatalf("re-decoding %x: %+v, %v; want %+v", enc, again, err, p)
			}
			if len(p.AuthInfo) == 0 && !bytes.Equal(enc, b[start:start+len(enc)]) {
				t.Fatalf("re-encoding differs:\n in %x\nout %x", b[start:start+len(enc)], enc)
			}
		}
	})
}

// FuzzElection: notifications, openings and configurations from the
// election port never panic, and a decoded notification of version 2
// re-encodes to its bytes.
func FuzzElection(f *testing.F) {
	for _, name := range []string{"notification", "notification-v2", "initial"} {
		f.Add(golden(f, name))
	}
	f.Add([]byte("server.1=127.0.0.1:1:2:observer\nversion=1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n, err := DecodeNotification(b); err == nil && n.Version >= 2 {
			if enc := n.Encode(); !bytes.Equal(enc, b[:len(enc)]) {
				t.Fatalf("notification re-encodes as %x from %x", enc, b)
			}
			m, err := DecodeNotification(n.Encode())
			if err != nil || !reflect.DeepEqual(m, n) {
				t.Fatalf("round trip: %+v %v", m, err)
			}
		}
		ReadInitialMessage(bytes.NewReader(b))
		ParseView(string(b))
		ParseTxnHeader(b)
		reconfigView(b)
	})
}
