package ops

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/zkserverd/zkserverd/datatree"
	"github.com/zkserverd/zkserverd/session"
	"github.com/zkserverd/zkserverd/txnlog"
)

// FuzzDecodeBackup: any input is a backup of one of the two formats or
// an error, never a panic, and an accepted zkserverd backup's tree
// matches the digest it records.
func FuzzDecodeBackup(f *testing.F) {
	tree := datatree.New(datatree.Config{})
	head, err := txnlog.SnapshotHead(txnlog.SnapshotHeader{LastZxid: 5, Digest: tree.Digest(), HasDigest: true}, session.NewTable())
	if err != nil {
		f.Fatal(err)
	}
	var own bytes.Buffer
	own.Write(head)
	if err := tree.WriteSnapshot(&own); err != nil {
		f.Fatal(err)
	}
	f.Add(own.Bytes())
	zk, err := os.ReadFile(filepath.Join("..", "..", "internal", "zkimport", "testdata", "zk38", "version-2", "snapshot.14"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(zk)
	f.Add([]byte("ZKSN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, format, err := DecodeBackup(bytes.NewReader(b))
		if err != nil {
			return
		}
		if format == formatZkserverd && st.HasDigest && st.Tree.Digest() != st.Digest {
			t.Fatal("a backup whose tree does not match its digest was accepted")
		}
		if st.Tree.NodeCount() < 4 {
			t.Fatalf("a %s backup without the system nodes was accepted", format)
		}
	})
}
