package ops

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/internal/zkimport"
	"github.com/zkserverd/zkserverd/replication"
	"github.com/zkserverd/zkserverd/txnlog"
)

// The AdminServer's snapshot and restore commands (ZooKeeper 3.9's
// SnapshotCommand and RestoreCommand; docs/operations.md, "Backup and
// restore"):
//
//	GET  <commandURL>/snapshot[?streaming=false][&format=zookeeper]
//	POST <commandURL>/restore   (the backup is the request body)
//
// Both need an Authorization header "<scheme> <credentials>" (for
// example "digest admin:secret"; "ip" and "x509" need no credentials):
// the identities it yields must hold every permission on the ACL of "/",
// as in ZooKeeper 3.9 (a missing header or failed authentication is 401,
// a missing permission 403). Each command runs at most once per
// admin.rateLimiterIntervalInMS (default five minutes; 429 otherwise),
// and admin.snapshot.enabled / admin.restore.enabled=false turn it off
// (503).
//
// snapshot streams a consistent snapshot of this member (any member may
// take one), in zkserverd's own format or, with format=zookeeper, in
// Apache ZooKeeper's, with the headers last_zxid and snapshot_size.
// restore reads either format, checks it whole, and installs it through
// the replicated log on the leader; a follower refuses with 503 and
// names the leader (the CLI then goes there; docs/operations.md). A
// damaged backup is refused with 400 and nothing changes.

// Query parameters and response headers of the snapshot command, as
// ZooKeeper names them; format is zkserverd's.
const (
	paramStreaming       = "streaming"
	paramFormat          = "format"
	headerLastZxid       = "last_zxid"
	headerSnapshotSize   = "snapshot_size"
	formatZooKeeper      = "zookeeper"
	formatZkserverd      = "zkserverd"
	defaultAdminInterval = 5 * time.Minute
)

// The refusals of the state-changing commands as ZooKeeper words them.
const (
	errAuthMissing      = "Auth info is missing for the command"
	errNotAuthenticated = "Not authenticated"
	errNotAuthorized    = "Not authorized"
)

// backupReplica is what the commands need from the replicated state;
// *replication.Node implements it.
type backupReplica interface {
	Backup() (replication.BackupInfo, io.ReadCloser, error)
	Restore(ctx context.Context, st *txnlog.SnapshotState) (replication.RestoreResult, error)
}

var _ backupReplica = (*replication.Node)(nil)

// backupCommands serves snapshot and restore for one AdminServer. It is
// made with the handler; its rate limits are its own state.
type backupCommands struct {
	o        *Surfaces
	snapshot commandGate
	restore  commandGate
}

// commandGate is whether a command is enabled and its rate limit.
type commandGate struct {
	enabled bool
	limit   *rateLimit
}

// newBackupCommands reads the commands' settings from the configuration
// (zoo.cfg keys admin.*, with or without the "zookeeper." prefix).
func newBackupCommands(o *Surfaces) *backupCommands {
	every := defaultAdminInterval
	if v, ok := extraKey(o, "admin.rateLimiterIntervalInMS"); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
			every = time.Duration(ms) * time.Millisecond
		} else {
			o.log.Warn("admin.rateLimiterIntervalInMS is not a number of milliseconds; using the default", "value", v, "default", every)
		}
	}
	return &backupCommands{
		o:        o,
		snapshot: commandGate{enabled: flagKey(o, "admin.snapshot.enabled"), limit: &rateLimit{every: every}},
		restore:  commandGate{enabled: flagKey(o, "admin.restore.enabled"), limit: &rateLimit{every: every}},
	}
}

// extraKey looks a zoo.cfg key up as written bare or with "zookeeper.".
func extraKey(o *Surfaces, key string) (string, bool) {
	if v, ok := o.cfg.Extra[key]; ok {
		return strings.TrimSpace(v), true
	}
	v, ok := o.cfg.Extra["zookeeper."+key]
	return strings.TrimSpace(v), ok
}

// flagKey is a boolean key that is true unless set to false.
func flagKey(o *Surfaces, key string) bool {
	v, ok := extraKey(o, key)
	return !ok || !strings.EqualFold(v, "false")
}

// rateLimit lets one call through per interval (ZooKeeper's
// RateLimiter with a rate of 1). mu guards last.
type rateLimit struct {
	every time.Duration
	mu    sync.Mutex
	last  time.Time
}

// allow reports whether a call may run now, and if so counts it.
func (l *rateLimit) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		return false
	}
	l.last = now
	return true
}

// serve answers the snapshot and restore commands and reports whether
// name was one of them.
func (b *backupCommands) serve(w http.ResponseWriter, r *http.Request, name string) bool {
	var primary, method string
	var gate *commandGate
	switch name {
	case "snapshot", "snap":
		primary, method, gate = "snapshot", http.MethodGet, &b.snapshot
	case "restore", "rest":
		primary, method, gate = "restore", http.MethodPost, &b.restore
	default:
		return false
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
		return true
	}
	if !b.o.serving() {
		writeCommandJSON(w, http.StatusOK, primary, nil, notServingError)
		return true
	}
	if code, msg := b.o.authorize(r); code != http.StatusOK { // handoff.go
		b.o.log.Warn("admin command refused", "command", primary, "remote", r.RemoteAddr, "reason", msg)
		writeCommandJSON(w, code, primary, nil, msg)
		return true
	}
	if !gate.enabled {
		b.o.log.Warn("admin command is disabled", "command", primary)
		writeCommandJSON(w, http.StatusServiceUnavailable, primary, nil, primary+" is disabled (admin."+primary+".enabled=false)")
		return true
	}
	if !gate.limit.allow(time.Now()) {
		b.o.log.Warn("admin command rate limited", "command", primary, "interval", gate.limit.every)
		writeCommandJSON(w, http.StatusTooManyRequests, primary, nil,
			fmt.Sprintf("%s runs at most once per %s (admin.rateLimiterIntervalInMS)", primary, gate.limit.every))
		return true
	}
	if primary == "snapshot" {
		b.serveSnapshot(w, r)
	} else {
		b.serveRestore(w, r)
	}
	return true
}

// serveSnapshot takes a backup and streams it (streaming=false: only
// the headers and the JSON reply).
func (b *backupCommands) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	streaming := !strings.EqualFold(q.Get(paramStreaming), "false")
	format := strings.ToLower(q.Get(paramFormat))
	if format == "" {
		format = formatZkserverd
	}
	if format != formatZkserverd && format != formatZooKeeper {
		writeCommandJSON(w, http.StatusBadRequest, "snapshot", nil, "unknown format "+strconv.Quote(format)+": zkserverd or zookeeper")
		return
	}
	rep, ok := b.o.st.Replica().(backupReplica)
	if !ok {
		writeCommandJSON(w, http.StatusInternalServerError, "snapshot", nil, "this server's replicated state takes no backups")
		return
	}
	info, rc, err := rep.Backup()
	if err != nil {
		b.o.log.Warn("snapshot command failed", "err", err)
		writeCommandJSON(w, http.StatusInternalServerError, "snapshot", nil, err.Error())
		return
	}
	defer rc.Close()
	var body io.Reader = rc
	size := info.Size
	if format == formatZooKeeper {
		converted, err := toZooKeeperFormat(rc)
		if err != nil {
			b.o.log.Warn("snapshot command failed", "err", err)
			writeCommandJSON(w, http.StatusInternalServerError, "snapshot", nil, err.Error())
			return
		}
		body, size = bytes.NewReader(converted), int64(len(converted))
	}
	h := w.Header()
	h.Set(headerLastZxid, fmt.Sprintf("0x%x", uint64(info.LastZxid)))
	h.Set(headerSnapshotSize, strconv.FormatInt(size, 10))
	b.o.log.Info("snapshot command", "zxid", fmt.Sprintf("%#x", info.LastZxid), "bytes", size, "format", format,
		"streaming", streaming, "remote", r.RemoteAddr)
	if !streaming {
		writeCommandJSON(w, http.StatusOK, "snapshot", nil, "")
		return
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", backupFileName(format, info.LastZxid)))
	// A large snapshot to a slow reader may outlast the server's timeouts.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if _, err := io.Copy(w, body); err != nil {
		b.o.log.Warn("snapshot command: stream cut", "err", err)
	}
}

// backupFileName is the name a backup is offered under: ZooKeeper's own
// snapshot name (snapshot.<zxid in hex>, which a ZooKeeper server loads
// from its data directory), or zkserverd's.
func backupFileName(format string, zxid int64) string {
	if format == formatZooKeeper {
		return fmt.Sprintf("snapshot.%x", uint64(zxid))
	}
	return fmt.Sprintf("zkserverd-backup.%x", uint64(zxid))
}

// toZooKeeperFormat re-encodes a zkserverd snapshot stream in Apache
// ZooKeeper's snapshot format.
func toZooKeeperFormat(r io.Reader) ([]byte, error) {
	st, err := txnlog.ReadSnapshot(r, datatree.Config{ExtendedTypesEnabled: true})
	if err != nil {
		return nil, fmt.Errorf("ops: snapshot: read back: %w", err)
	}
	var out bytes.Buffer
	if _, err := zkimport.WriteSnapshot(&out, st.Tree, st.Sessions); err != nil {
		return nil, fmt.Errorf("ops: snapshot: %w", err)
	}
	return out.Bytes(), nil
}

// ErrUnknownBackup is wrapped by DecodeBackup's error for a stream that
// is neither format.
var ErrUnknownBackup = errors.New("not a snapshot of zkserverd or Apache ZooKeeper")

// DecodeBackup reads a whole backup in either format, telling them apart
// by their first bytes: zkserverd's snapshot (txnlog/snapshot.go), whose
// tree must match the digest it records, or Apache ZooKeeper's
// (internal/zkimport), whose Adler-32 seal must match. It returns the
// state and the format's name. A truncated or damaged backup is an
// error; nothing is half-read into any state.
func DecodeBackup(r io.Reader) (*txnlog.SnapshotState, string, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(8)
	if err != nil && len(magic) < 4 {
		return nil, "", fmt.Errorf("ops: backup of %d bytes: %w", len(magic), ErrUnknownBackup)
	}
	switch {
	case bytes.Equal(magic, []byte("ZKSDSNAP")):
		st, err := txnlog.ReadSnapshot(br, datatree.Config{ExtendedTypesEnabled: true})
		if err != nil {
			return nil, "", fmt.Errorf("ops: zkserverd backup: %w", err)
		}
		if st.HasDigest && st.Tree.Digest() != st.Digest {
			return nil, "", fmt.Errorf("ops: zkserverd backup: %w: the tree does not match its digest", txnlog.ErrBadSnapshot)
		}
		return st, formatZkserverd, nil
	case bytes.Equal(magic[:4], []byte("ZKSN")):
		bk, err := zkimport.ReadBackup(br)
		if err != nil {
			return nil, "", fmt.Errorf("ops: ZooKeeper backup: %w", err)
		}
		st := &txnlog.SnapshotState{SnapshotHeader: txnlog.SnapshotHeader{LastZxid: bk.LastZxid},
			Tree: bk.Tree, Sessions: bk.Sessions}
		return st, formatZooKeeper, nil
	}
	return nil, "", fmt.Errorf("ops: %w", ErrUnknownBackup)
}

// serveRestore decodes the request body and restores it on the leader.
func (b *backupCommands) serveRestore(w http.ResponseWriter, r *http.Request) {
	rep, ok := b.o.st.Replica().(backupReplica)
	if !ok {
		writeCommandJSON(w, http.StatusInternalServerError, "restore", nil, "this server's replicated state cannot restore")
		return
	}
	// The upload may take longer than an idle connection is allowed to.
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	st, format, err := DecodeBackup(r.Body)
	if err != nil {
		b.o.log.Warn("restore command: backup refused; nothing changed", "err", err)
		writeCommandJSON(w, http.StatusBadRequest, "restore", nil, "backup refused, nothing changed: "+err.Error())
		return
	}
	res, err := rep.Restore(r.Context(), st)
	if errors.Is(err, replication.ErrNotLeader) {
		writeCommandJSON(w, http.StatusServiceUnavailable, "restore", jsonObject{{"leader_id", b.o.st.Replica().Leader()}},
			err.Error()+b.leaderHint())
		return
	}
	if err != nil {
		b.o.log.Warn("restore command failed", "err", err)
		writeCommandJSON(w, http.StatusInternalServerError, "restore", nil, err.Error())
		return
	}
	b.o.log.Info("restore command", "format", format, "zxid", fmt.Sprintf("%#x", res.LastZxid), "nodes", res.Nodes,
		"sessions", res.Sessions, "index", res.Index, "remote", r.RemoteAddr)
	writeCommandJSON(w, http.StatusOK, "restore", jsonObject{
		{"last_zxid", res.LastZxid}, {"format", format}, {"node_count", int64(res.Nodes)},
		{"session_count", int64(res.Sessions)}, {"log_index", int64(res.Index)},
	}, "")
}

// leaderHint names the leader's client address from the configuration,
// when its server line has one.
func (b *backupCommands) leaderHint() string {
	id := b.o.st.Replica().Leader()
	for _, m := range b.o.cfg.Servers {
		if m.ID == id && id != 0 {
			if addr := b.o.memberClientAddress(m); addr != "" {
				return " (host " + m.Host + ", client address " + addr + ")"
			}
			return " (host " + m.Host + ")"
		}
	}
	return ""
}

// writeCommandJSON writes a command's JSON reply with an HTTP status:
// the fields, then "command" and "error" (null when errMsg is empty).
func writeCommandJSON(w http.ResponseWriter, status int, command string, fields jsonObject, errMsg string) {
	var e any
	if errMsg != "" {
		e = errMsg
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, encodeJSON(append(fields, jsonField{"command", command}, jsonField{"error", e})))
}
