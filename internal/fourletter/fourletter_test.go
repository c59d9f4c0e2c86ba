package fourletter

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestAsk: the word reaches the server and the whole reply comes back,
// however long; a server that does not listen is an error.
func TestAsk(t *testing.T) {
	long := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 400) // over two read buffers
	tests := []struct {
		name, word, reply string
		listen            bool
		wantErr           bool
	}{
		{"short reply", "ruok", "imok", true, false},
		{"reply longer than a read buffer", "dump", long, true, false},
		{"empty reply", "stat", "", true, false},
		{"nothing listens", "srvr", "", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, heard := serve(t, tc.reply)
			if !tc.listen {
				addr = closedAddr(t)
			}
			got, err := Ask(addr, tc.word)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Ask error = %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.reply {
				t.Errorf("Ask = %d bytes, want %d", len(got), len(tc.reply))
			}
			if tc.listen {
				if w := <-heard; w != tc.word {
					t.Errorf("server heard %q, want %q", w, tc.word)
				}
			}
		})
	}
}

// serve answers one connection on a loopback port: it reads a word of
// four bytes, sends it on heard, writes reply and closes.
func serve(t *testing.T, reply string) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	heard := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		word := make([]byte, 4)
		n, _ := io.ReadFull(c, word)
		heard <- string(word[:n])
		c.Write([]byte(reply))
	}()
	return ln.Addr().String(), heard
}

// closedAddr is a loopback address that nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
