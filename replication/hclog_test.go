package replication

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestRaftLinesReachSlog: raft's lines keep their level, formatted
// arguments and component.
func TestRaftLinesReachSlog(t *testing.T) {
	tests := []struct {
		name  string
		level slog.Level // the logger's
		log   func(hclog.Logger)
		want  string // in the output; "" for no output
		// single is a standalone server's logger (newPeerHCLogger).
		single bool
	}{
		{"warning", slog.LevelWarn, func(l hclog.Logger) { l.Warn("heartbeat timeout reached", "last", hclog.Fmt("%d ms", 5)) },
			`level=WARN msg="heartbeat timeout reached" component=raft last="5 ms"`, false},
		{"a follower's refusal stays a warning", slog.LevelWarn, func(l hclog.Logger) { l.Warn("failed to get previous log", "previous-index", 9) },
			`level=WARN msg="failed to get previous log" component=raft previous-index=9`, false},
		{"info at warn", slog.LevelWarn, func(l hclog.Logger) { l.Info("entering follower state") }, "", false},
		{"error by level", slog.LevelInfo, func(l hclog.Logger) { l.Log(hclog.Error, "failed to append") },
			`level=ERROR msg="failed to append" component=raft`, false},
		{"a standalone server's election is information", slog.LevelInfo, func(l hclog.Logger) { l.Warn(electionStart, "last-leader-id", "") },
			`level=INFO msg="heartbeat timeout reached, starting election"`, true},
		{"a standalone server's restarted election is information", slog.LevelInfo, func(l hclog.Logger) { l.Warn(electionRestart) },
			`level=INFO msg="Election timeout reached, restarting election"`, true},
		{"an ensemble member's election stays a warning", slog.LevelInfo, func(l hclog.Logger) { l.Warn(electionStart, "last-leader-id", "") },
			`level=WARN msg="heartbeat timeout reached, starting election"`, false},
		{"a standalone server's other warnings stay", slog.LevelInfo, func(l hclog.Logger) { l.Named("x").Warn("failed to contact quorum of nodes, stepping down") },
			`level=WARN msg="failed to contact quorum`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			l := newPeerHCLogger(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level})), nil, tc.single)
			tc.log(l)
			got := out.String()
			if tc.want == "" {
				if got != "" {
					t.Fatalf("logged %q, want nothing", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("logged %q, want it to contain %q", got, tc.want)
			}
		})
	}
}
