package ops

import (
	"strconv"
	"strings"
	"testing"
)

// TestMemoryLimitReported checks the memory limit's figures in mntr and
// /metrics, with and without memory.limitBytes (the test process sets no
// Go soft limit, so without the key there is no limit).
func TestMemoryLimitReported(t *testing.T) {
	tests := []struct {
		name  string
		limit int64
	}{
		{"no limit", 0},
		{"memory.limitBytes", 1 << 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := opsConfig(t)
			cfg.MemoryLimitBytes = tt.limit
			s := startOpsServer(t, testOptions{Config: cfg})
			mntr := fourLetterReply(s.Surfaces, "mntr")
			for _, line := range []string{
				"zk_memory_limit_bytes\t" + strconv.FormatInt(tt.limit, 10),
				"zk_memory_refusing\t0",
				"zk_memory_refused_writes\t0",
				"zk_memory_live_heap_bytes\t",
			} {
				if !strings.Contains(mntr, "\n"+line) {
					t.Errorf("mntr has no %q:\n%s", line, mntr)
				}
			}
			m := scrape(t, s)
			if m["memory_limit_bytes"] != float64(tt.limit) || m["memory_refusing"] != 0 || m[memoryRefusedWritesMetric] != 0 {
				t.Errorf("/metrics: memory_limit_bytes %v (want %d), memory_refusing %v, %s %v",
					m["memory_limit_bytes"], tt.limit, m["memory_refusing"], memoryRefusedWritesMetric, m[memoryRefusedWritesMetric])
			}
		})
	}
}
