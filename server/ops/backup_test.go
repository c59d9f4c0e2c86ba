package ops

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkserverd/zkserverd/acl"
)

// backupServer starts a standalone server whose backup commands run
// every interval (0: no limit) and whose "/" allows only digest admin:pw
// (and the super digest super:secret); extra adds zoo.cfg keys.
func backupServer(t *testing.T, interval string, extra map[string]string) (*testServer, *zk.Conn) {
	t.Helper()
	cfg := opsConfig(t)
	cfg.SuperDigest = acl.Digest("super:secret")
	cfg.Extra["admin.rateLimiterIntervalInMS"] = interval
	for k, v := range extra {
		cfg.Extra[k] = v
	}
	s := startOpsServer(t, testOptions{Config: cfg})
	c := opsClient(t, s)
	if err := c.AddAuth("digest", []byte("admin:pw")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/app", "/app/a", "/app/b"} {
		if _, err := c.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetACL("/", zk.DigestACL(zk.PermAll, "admin", "pw"), -1); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// adminDo sends one request to the AdminServer with an Authorization
// header (none when auth is empty).
func adminDo(t *testing.T, s *testServer, method, command, auth string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.AdminAddr().String()+"/commands/"+command, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, command, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// TestAdminBackupAuth: both commands need credentials whose identities
// hold every permission on "/", and the right method.
func TestAdminBackupAuth(t *testing.T) {
	s, _ := backupServer(t, "0", nil)
	cases := []struct {
		name, method, command, auth string
		status                      int
		errText                     string
	}{
		{"no header", "GET", "snapshot?streaming=false", "", 401, errAuthMissing},
		{"unknown scheme", "GET", "snapshot?streaming=false", "nosuch x", 401, errNotAuthenticated},
		{"too many words", "GET", "snapshot?streaming=false", "digest a b", 401, errNotAuthenticated},
		{"other user", "GET", "snapshot?streaming=false", "digest other:pw", 403, errNotAuthorized},
		{"wrong password", "POST", "restore", "digest admin:nope", 403, errNotAuthorized},
		{"ip lacks permission", "GET", "snap?streaming=false", "ip", 403, errNotAuthorized},
		{"admin", "GET", "snapshot?streaming=false", "digest admin:pw", 200, ""},
		{"super", "GET", "snapshot?streaming=false", "digest super:secret", 200, ""},
		{"restore by GET", "GET", "restore", "digest admin:pw", 405, ""},
		{"snapshot by POST", "POST", "snapshot", "digest admin:pw", 405, ""},
	}
	for _, c := range cases {
		status, hdr, body := adminDo(t, s, c.method, c.command, c.auth, nil)
		if status != c.status || (c.errText != "" && !strings.Contains(string(body), c.errText)) {
			t.Errorf("%s: %d %s, want %d %q", c.name, status, body, c.status, c.errText)
		}
		if c.status == 200 && (hdr.Get(headerLastZxid) == "" || hdr.Get(headerSnapshotSize) == "") {
			t.Errorf("%s: no last_zxid or snapshot_size header: %v", c.name, hdr)
		}
	}
}

// TestAdminBackupRateLimitAndSwitches: a second call within the interval
// is refused with 429, and a command turned off answers 503.
func TestAdminBackupRateLimitAndSwitches(t *testing.T) {
	s, _ := backupServer(t, "3600000", map[string]string{"zookeeper.admin.restore.enabled": "false"})
	const auth = "digest admin:pw"
	if status, _, body := adminDo(t, s, "GET", "snapshot?streaming=false", auth, nil); status != 200 {
		t.Fatalf("first snapshot: %d %s", status, body)
	}
	if status, _, body := adminDo(t, s, "GET", "snapshot?streaming=false", auth, nil); status != 429 {
		t.Errorf("second snapshot within the interval: %d %s, want 429", status, body)
	}
	if status, _, body := adminDo(t, s, "POST", "restore", auth, []byte("x")); status != 503 {
		t.Errorf("disabled restore: %d %s, want 503", status, body)
	}
}

// TestAdminBackupRestoreRoundTrip backs a server up in both formats,
// changes it, and restores each backup: the tree is the backup's again.
// Damaged backups are refused with 400 and change nothing.
func TestAdminBackupRestoreRoundTrip(t *testing.T) {
	s, c := backupServer(t, "0", nil)
	const auth = "digest admin:pw"
	backups := map[string][]byte{}
	for _, format := range []string{formatZkserverd, formatZooKeeper} {
		status, hdr, body := adminDo(t, s, "GET", "snapshot?format="+format, auth, nil)
		if status != 200 || hdr.Get(headerSnapshotSize) != strings.TrimSpace(hdr.Get("Content-Length")) {
			t.Fatalf("snapshot %s: %d %v", format, status, hdr)
		}
		backups[format] = body
	}
	if !bytes.HasPrefix(backups[formatZooKeeper], []byte("ZKSN")) || !bytes.HasPrefix(backups[formatZkserverd], []byte("ZKSDSNAP")) {
		t.Fatal("the backups do not start with their formats' magic")
	}
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/app", "/app/a", "/app/b", "/later"} {
			data, st, err := c.Get(p)
			b.WriteString(p + " " + string(data) + " " + err2s(err))
			if st != nil {
				b.WriteString(" " + strings.Join([]string{i64(st.Czxid), i64(st.Mzxid), i64(int64(st.Version)), i64(int64(st.Cversion))}, ","))
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	want := state()
	for _, format := range []string{formatZooKeeper, formatZkserverd} {
		if _, err := c.Create("/later", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Set("/app/a", []byte("changed"), -1); err != nil {
			t.Fatal(err)
		}
		changed := state()
		b := backups[format]
		for _, bad := range []struct {
			name string
			body []byte
		}{
			{"empty", nil},
			{"garbage", []byte("not a snapshot at all")},
			{"truncated", b[:len(b)*2/3]},
			{"corrupt", append(append(append([]byte(nil), b[:len(b)/2]...), b[len(b)/2]^0x5a), b[len(b)/2+1:]...)},
		} {
			status, _, body := adminDo(t, s, "POST", "restore", auth, bad.body)
			if status != 400 || !strings.Contains(string(body), "nothing changed") {
				t.Errorf("%s %s backup: %d %s, want 400", format, bad.name, status, body)
			}
		}
		if got := state(); got != changed {
			t.Fatalf("a refused restore changed the tree:\n%s\nwant\n%s", got, changed)
		}
		status, _, body := adminDo(t, s, "POST", "restore", auth, b)
		if status != 200 || !strings.Contains(string(body), `"format" : "`+format+`"`) {
			t.Fatalf("restore %s: %d %s", format, status, body)
		}
		// The session was in the backup, so the connection lives on.
		var got string
		deadline := time.Now().Add(10 * time.Second)
		for got = state(); got != want && time.Now().Before(deadline); got = state() {
			time.Sleep(20 * time.Millisecond)
		}
		if got != want {
			t.Fatalf("after restoring the %s backup:\n%s\nwant\n%s", format, got, want)
		}
	}
}

func err2s(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }
