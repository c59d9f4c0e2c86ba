package server

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/zkserverd/zkserverd/internal/testutil"
)

// TestShedConnections opens idle connections to a standalone server and
// sheds a share of them: exactly the share rounded up is closed (the
// server's end of each shed connection is gone, the rest stay open), and
// a percentage outside 0..100 closes nothing.
func TestShedConnections(t *testing.T) {
	cases := []struct {
		percentage int
		conns      int
		want       int
		wantErr    bool
	}{
		{percentage: 0, conns: 4, want: 0},
		{percentage: 25, conns: 4, want: 1},
		{percentage: 30, conns: 4, want: 2}, // 1.2 rounds up
		{percentage: 100, conns: 4, want: 4},
		{percentage: 50, conns: 0, want: 0},
		{percentage: -1, conns: 4, wantErr: true},
		{percentage: 101, conns: 4, wantErr: true},
	}
	s := startOpsServer(t, Options{Config: opsConfig(t)})
	for _, tc := range cases {
		var clients []net.Conn
		for range tc.conns {
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			clients = append(clients, c)
		}
		testutil.Eventually(t, 5*time.Second, "the server admits every connection", func() bool {
			return len(s.Connections()) == tc.conns
		})
		got, err := s.ShedConnections(tc.percentage)
		switch {
		case tc.wantErr && err == nil:
			t.Errorf("%d%%: no error", tc.percentage)
		case !tc.wantErr && err != nil:
			t.Errorf("%d%%: %v", tc.percentage, err)
		case got != tc.want && !tc.wantErr:
			t.Errorf("%d%% of %d: shed %d, want %d", tc.percentage, tc.conns, got, tc.want)
		}
		closed := 0
		for _, c := range clients {
			c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				closed++
			}
			c.Close()
		}
		if want := tc.want; closed != want {
			t.Errorf("%d%% of %d: %d connections closed by the server, want %d", tc.percentage, tc.conns, closed, want)
		}
		testutil.Eventually(t, 5*time.Second, "the server forgets the connections", func() bool {
			return len(s.Connections()) == 0
		})
	}
}
