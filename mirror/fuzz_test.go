package mirror

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// FuzzTxn feeds arbitrary entries to a state holding a small tree and a
// session with an ephemeral, as the transaction after the ones it has
// (the header's zxid set to that one),
// both strictly and in the sync phase: never a panic, and an entry that is
// refused breaks the state.
func FuzzTxn(f *testing.F) {
	for _, p := range zkFilesF(f, "log") {
		file, err := os.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		readEntries(file, func(e []byte) { f.Add(e, true) })
		file.Close()
	}
	for _, s := range everyChange() {
		f.Add(s.entry(4), false)
	}
	setup := []step{op(jute.OpCreateSession, sessionTxn(4000)), op(jute.OpCreate, createTxn("/a", "x", false, 1)),
		op(jute.OpCreate, createTxn("/a/e", "", true, 1))}
	f.Fuzz(func(t *testing.T, entry []byte, synced bool) {
		st := New(Options{})
		if synced {
			st.UpToDate()
		}
		for i, s := range setup {
			if err := st.Txn(int64(i+1), s.entry(int64(i+1))); err != nil {
				t.Fatal(err)
			}
		}
		zxid := int64(len(setup) + 1)
		if len(entry) >= 20 { // any entry is the next one
			entry = bytes.Clone(entry)
			copy(entry[12:20], []byte{0, 0, 0, 0, 0, 0, 0, byte(zxid)})
		}
		err := st.Txn(zxid, entry)
		st.UpToDate()
		if err != nil && st.Err() == nil {
			t.Fatalf("refused (%v) without breaking the state", err)
		}
		if err == nil && st.Err() == nil && st.LastZxid() != zxid {
			t.Fatalf("applied, but the state is at %#x, not %#x", st.LastZxid(), zxid)
		}
	})
}

// FuzzSnapshot reads arbitrary snapshot bodies: never a panic, never a
// read past what the body needs.
func FuzzSnapshot(f *testing.F) {
	for _, p := range zkFilesF(f, "snapshot") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[16:])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		st := New(Options{})
		err := st.Snapshot(7, bufio.NewReader(bytes.NewReader(body)))
		if err == nil && (st.Err() != nil || st.LastZxid() != 7 || st.Tree().NodeCount() < 4) {
			t.Fatalf("accepted, but err %v, zxid %d, %d nodes", st.Err(), st.LastZxid(), st.Tree().NodeCount())
		}
		if err != nil && st.Err() == nil {
			t.Fatal("refused without breaking the state")
		}
	})
}

// zkFilesF lists the recording's files named prefix.*.
func zkFilesF(f *testing.F, prefix string) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "zk38", "version-2", prefix+".*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no %s files in the recording: %v", prefix, err)
	}
	return files
}
