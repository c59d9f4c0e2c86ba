package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/txnlog"
)

// Replica digests. Every member keeps a digest of its tree, updated on
// every apply (datatree.Tree.Digest). The leader appends a checkpoint
// entry every digest interval in which the tree changed (steward.go);
// every member records its digest when it applies the checkpoint, at the
// same log position, so honest members record equal digests. Once the
// leader has applied the checkpoint it appends its own record in a digest
// entry, and every member compares that record with its own. A member
// whose digest differs is fenced: it serves no client until an operator
// acts (docs/operations.md), and says so at ERROR. The fence is written
// to the data directory (fenceFile), so a restart does not lift it.

// DigestRecord is one entry of a member's digest log: the digest of its
// tree after the transaction with Zxid was applied, recorded when it
// applied the checkpoint entry at Index. Records with the same Index carry
// the same Digest on every member of an ensemble.
type DigestRecord struct {
	Index  uint64
	Zxid   int64
	Digest uint64
}

// digestLogSize bounds the records a member keeps (ZooKeeper keeps 1024).
const digestLogSize = 1024

// fenceFile, in the data directory, holds the reason a member was fenced.
const fenceFile = "FENCED"

// ErrFenced is wrapped by the reason a fenced member gives.
var ErrFenced = errors.New("replication: member fenced")

// digestLog is a member's recent digest records and its fence. mu guards
// every field; dir is set at open and not changed.
type digestLog struct {
	mu         sync.Mutex
	dir        string // where fenceFile goes; "" in memory
	records    []DigestRecord
	mismatches int64
	fenced     error
}

func (d *digestLog) add(r DigestRecord) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.records) == digestLogSize {
		d.records = append(d.records[:0], d.records[1:]...)
	}
	d.records = append(d.records, r)
}

// find returns the record made at index.
func (d *digestLog) find(index uint64) (DigestRecord, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := len(d.records) - 1; i >= 0; i-- {
		if d.records[i].Index == index {
			return d.records[i], true
		}
	}
	return DigestRecord{}, false
}

// fence stops the member from serving for reason, durably; only the first
// reason is kept.
func (d *digestLog) fence(log *slog.Logger, reason error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fenced != nil {
		return
	}
	d.fenced = fmt.Errorf("%w: %w", ErrFenced, reason)
	log.Error("this member's state differs from the ensemble's: it stops serving clients until an operator acts (docs/operations.md, \"A fenced member\")",
		"reason", reason.Error())
	if d.dir == "" {
		return
	}
	text := time.Now().UTC().Format(time.RFC3339) + " " + reason.Error() + "\n"
	if err := os.WriteFile(filepath.Join(d.dir, fenceFile), []byte(text), 0o640); err != nil {
		log.Error("could not record the fence in the data directory", "err", err)
	}
}

// loadFence restores a fence recorded by an earlier run in dir.
func (d *digestLog) loadFence(log *slog.Logger, dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dir = dir
	b, err := os.ReadFile(filepath.Join(dir, fenceFile))
	if err != nil {
		return
	}
	path := filepath.Join(dir, fenceFile)
	d.fenced = fmt.Errorf("%w since an earlier run (%s): %s", ErrFenced, path, strings.TrimSpace(string(b)))
	log.Error("this member was fenced and serves no client; see docs/operations.md, \"A fenced member\", then remove the file",
		"file", path, "reason", strings.TrimSpace(string(b)))
}

// compare checks the leader's record of a checkpoint against this
// member's own, and fences the member on a difference. A checkpoint this
// member did not record (it restored a later snapshot) is skipped.
func (d *digestLog) compare(log *slog.Logger, leader DigestRecord) {
	own, ok := d.find(leader.Index)
	if !ok || own == leader {
		return
	}
	d.mu.Lock()
	d.mismatches++
	d.mu.Unlock()
	d.fence(log, fmt.Errorf("digest mismatch at log index %d: this member has zxid %#x digest %016x, the leader zxid %#x digest %016x",
		leader.Index, own.Zxid, own.Digest, leader.Zxid, leader.Digest))
}

// checkpoint records the tree's digest at a checkpoint entry.
func (f *fsm) checkpoint(index uint64, tree *datatree.Tree) DigestRecord {
	r := DigestRecord{Index: index, Zxid: f.lastZxid.Load(), Digest: tree.Digest()}
	f.digests.add(r)
	return r
}

// applyControl applies a control entry (txnlog/control.go).
func (f *fsm) applyControl(index uint64, c *txnlog.Control) {
	switch c.Kind {
	case txnlog.EntryIdentity:
		f.learnIdentity(c.Ensemble, fmt.Sprintf("log entry %d", index))
	case txnlog.EntryCheckpoint:
		r := f.checkpoint(index, f.tree.Load())
		if f.onCheckpoint != nil {
			f.onCheckpoint(r)
		}
	case txnlog.EntryDigest:
		f.digests.compare(f.log, DigestRecord{Index: c.Index, Zxid: c.Zxid, Digest: c.Digest})
	}
}

// learnIdentity records the ensemble id found in the log or a snapshot.
// The first one decides; a later identity entry naming another ensemble
// (two leaders of a new history each proposed one) is ignored by every
// member alike. A snapshot of another ensemble fences the member.
func (f *fsm) learnIdentity(id txnlog.EnsembleID, from string) {
	if id.IsZero() || id == f.ensemble {
		return
	}
	if !f.ensemble.IsZero() {
		f.log.Info("ignoring a later ensemble identity", "from", from, "ensemble", f.ensemble.String(), "ignored", id.String())
		return
	}
	f.ensemble = id
	if err := f.ident.adopt(id); err != nil {
		f.digests.fence(f.log, fmt.Errorf("%s: %w", from, err))
		return
	}
	f.log.Info("ensemble identity", "ensemble", id.String(), "from", from)
}

// Digests returns the member's recent digest records, newest last.
func (n *Node) Digests() []DigestRecord {
	n.digests.mu.Lock()
	defer n.digests.mu.Unlock()
	return append([]DigestRecord(nil), n.digests.records...)
}

// DigestMismatches counts the checkpoints at which this member's digest
// differed from the leader's.
func (n *Node) DigestMismatches() int64 {
	n.digests.mu.Lock()
	defer n.digests.mu.Unlock()
	return n.digests.mismatches
}

// Fenced returns why this member must not serve clients (its tree differs
// from the ensemble's), nil while it may.
func (n *Node) Fenced() error {
	n.digests.mu.Lock()
	defer n.digests.mu.Unlock()
	return n.digests.fenced
}

// Ensemble returns the id of the ensemble this member belongs to (zero
// until it is known).
func (n *Node) Ensemble() txnlog.EnsembleID { return n.ident.get() }
