package server

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// addrCountingConn is a net.Conn whose RemoteAddr counts its calls.
type addrCountingConn struct {
	net.Conn
	calls int
}

func (c *addrCountingConn) RemoteAddr() net.Addr {
	c.calls++
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 4242}
}

// TestConnLogFormatsAddressOnlyWhenWritten: a record under the logger's
// level costs no address formatting; a written one names the remote.
func TestConnLogFormatsAddressOnlyWhenWritten(t *testing.T) {
	tests := []struct {
		name    string
		level   slog.Level
		log     func(connLog)
		written bool
	}{
		{"debug at warn", slog.LevelWarn, func(g connLog) { g.Debug("session established", "session", "0x1") }, false},
		{"info at warn", slog.LevelWarn, func(g connLog) { g.Info("closing connection") }, false},
		{"warn at warn", slog.LevelWarn, func(g connLog) { g.Warn("bad connect frame; closing", "err", "short") }, true},
		{"debug at debug", slog.LevelDebug, func(g connLog) { g.Debug("session established", "session", "0x1") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			nc := &addrCountingConn{}
			g := connLog{l: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tt.level})), nc: nc}
			tt.log(g)
			if !tt.written {
				if out.Len() != 0 || nc.calls != 0 {
					t.Fatalf("filtered record wrote %q and asked for the address %d times", out.String(), nc.calls)
				}
				return
			}
			line := out.String()
			if !strings.Contains(line, "remote=127.0.0.9:4242") {
				t.Fatalf("record %q does not name the remote address", line)
			}
			if strings.Count(line, "\n") != 1 {
				t.Fatalf("want one record, got %q", line)
			}
		})
	}
}
