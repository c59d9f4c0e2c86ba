package test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/internal/testutil"
	"github.com/zkserverd/zkserverd/server"
	"github.com/zkserverd/zkserverd/server/servertest"
)

// auditLines are the audit records among JSON log lines.
func auditLines(text string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(text, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["component"] == "audit" {
			out = append(out, m)
		}
	}
	return out
}

func TestAuditLogOneLinePerWrite(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AuditEnable = true
	var logs testutil.LogCapture
	srv := servertest.Start(t, server.Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	c, _ := testutil.Connect(t, srv.Addr().String(), 4*time.Second)
	if err := c.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/audited", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("/missing", -1); !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	if _, _, err := c.Get("/audited"); err != nil { // a read: not audited
		t.Fatal(err)
	}
	var got []map[string]any
	testutil.Eventually(t, 5*time.Second, "two audit lines", func() bool {
		got = auditLines(logs.String())
		return len(got) >= 2 // the create and the failed delete; the read is not audited
	})
	if len(got) != 2 {
		t.Fatalf("%d audit lines, want 2: %v", len(got), got)
	}
	create, del := got[0], got[1]
	if create["operation"] != "create" || create["znode"] != "/audited" || create["result"] != "success" ||
		!strings.Contains(create["user"].(string), "digest:alice:") || create["ip"] != "127.0.0.1" {
		t.Fatalf("create audit line: %v", create)
	}
	if del["operation"] != "delete" || del["znode"] != "/missing" || del["result"] != "failure" || del["code"] != "NoNode" {
		t.Fatalf("delete audit line: %v", del)
	}
}
