package testutil

import (
	"testing"
	"time"
)

// TestFourLetterLine: the whole reply is read and the
// value of the line with the prefix is returned ("" without one).
func TestFourLetterLine(t *testing.T) {
	tests := []struct {
		name, reply, prefix, want string
	}{
		{"middle line", "zk_version\t3.8\nzk_global_sessions\t4\nzk_x\t1\n", "zk_global_sessions\t", "4"},
		{"last line without newline", "a\tb\nzk_x\t17", "zk_x\t", "17"},
		{"absent", "a\tb\n", "zk_x\t", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := FourLetterServer(t, tc.reply)
			if got := FourLetterLine(addr, "mntr", tc.prefix); got != tc.want {
				t.Errorf("FourLetterLine = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEventuallyReturnsOnceTheConditionHolds: the condition is polled
// until it holds, then Eventually returns without failing.
func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, 5*time.Second, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

// TestConfigIsLoopbackWithPickedPorts: the configuration binds nothing
// but loopback and lets the kernel pick its ports.
func TestConfigIsLoopbackWithPickedPorts(t *testing.T) {
	dir := t.TempDir()
	cfg := Config(dir)
	if cfg.ClientPortAddress != "127.0.0.1" || cfg.ClientPort != 0 || cfg.AdminServerAddress != "127.0.0.1" || cfg.AdminServerPort != 0 {
		t.Fatalf("not loopback with picked ports: %s:%d, admin %s:%d", cfg.ClientPortAddress, cfg.ClientPort, cfg.AdminServerAddress, cfg.AdminServerPort)
	}
	if cfg.DataDir != dir || cfg.DataLogDir != dir {
		t.Fatalf("data in %q and %q, want %q", cfg.DataDir, cfg.DataLogDir, dir)
	}
}

// TestFourLetterNumber: the number after the prefix is parsed in the
// given base.
func TestFourLetterNumber(t *testing.T) {
	tests := []struct {
		name, reply, prefix string
		base                int
		want                int64
	}{
		{"hex zxid", "Zookeeper version: x\nZxid: 0x10000002a\nMode: leader\n", "Zxid: 0x", 16, 0x10000002a},
		{"decimal mntr value", "zk_version\t3.8\nzk_watch_count\t12\n", "zk_watch_count\t", 10, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := FourLetterServer(t, tc.reply)
			if got := FourLetterNumber(t, addr, "srvr", tc.prefix, tc.base); got != tc.want {
				t.Errorf("FourLetterNumber = %d, want %d", got, tc.want)
			}
		})
	}
}
