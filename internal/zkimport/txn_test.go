package zkimport

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zkserverd/zkserverd/jute"
)

// entry encodes a TxnHeader of type typ (zxid 5, session 9) followed by
// what body writes.
func entry(typ jute.OpCode, body func(e *jute.Encoder)) []byte {
	var e jute.Encoder
	e.Long(9)
	e.Int(3)
	e.Long(5)
	e.Long(1000)
	e.Int(int32(typ))
	body(&e)
	return e.Bytes()
}

func createBody(e *jute.Encoder) {
	e.String("/a")
	e.Buffer([]byte("d"))
	e.Int(1)
	jute.OpenACLUnsafe[0].Encode(e)
	e.Bool(true)
}

func digest(e *jute.Encoder) { e.Int(2); e.Long(-7) }

func TestDecodeTxn(t *testing.T) {
	tests := []struct {
		name    string
		b       []byte
		wantErr error
		check   func(t *testing.T, x *Txn)
	}{
		{name: "create", b: entry(jute.OpCreate, func(e *jute.Encoder) { createBody(e); e.Int(4) }),
			check: func(t *testing.T, x *Txn) {
				o := x.Op
				if o.Path != "/a" || string(o.Data) != "d" || !o.Ephemeral || o.ParentCVersion != 4 || x.Digest != nil ||
					x.Header != (TxnHeader{ClientID: 9, Cxid: 3, Zxid: 5, Time: 1000, Type: jute.OpCreate}) {
					t.Errorf("%+v", x)
				}
			}},
		{name: "create with a digest", b: entry(jute.OpCreate, func(e *jute.Encoder) { createBody(e); e.Int(4); digest(e) }),
			check: func(t *testing.T, x *Txn) {
				if x.Op.ParentCVersion != 4 || x.Digest == nil || *x.Digest != (TxnDigest{Version: 2, Tree: -7}) {
					t.Errorf("%+v %+v", x.Op, x.Digest)
				}
			}},
		{name: "create version 0", b: entry(jute.OpCreate, createBody),
			check: func(t *testing.T, x *Txn) {
				if x.Op.ParentCVersion != -1 {
					t.Errorf("parentCVersion %d", x.Op.ParentCVersion)
				}
			}},
		{name: "closeSession with paths and a digest", b: entry(jute.OpCloseSession, func(e *jute.Encoder) {
			e.Int(2)
			e.String("/x")
			e.String("/y")
			digest(e)
		}), check: func(t *testing.T, x *Txn) {
			if !slices.Equal(x.Op.Paths, []string{"/x", "/y"}) || x.Digest == nil {
				t.Errorf("%+v", x)
			}
		}},
		{name: "closeSession listing nothing", b: entry(jute.OpCloseSession, func(e *jute.Encoder) { e.Int(0) }),
			check: func(t *testing.T, x *Txn) {
				if x.Op.Paths == nil || len(x.Op.Paths) != 0 {
					t.Errorf("paths %#v", x.Op.Paths)
				}
			}},
		{name: "closeSession before 3.6", b: entry(jute.OpCloseSession, func(*jute.Encoder) {}),
			check: func(t *testing.T, x *Txn) {
				if x.Op.Paths != nil {
					t.Errorf("paths %#v", x.Op.Paths)
				}
			}},
		{name: "closeSession before 3.6 with a digest", b: entry(jute.OpCloseSession, digest),
			check: func(t *testing.T, x *Txn) {
				if x.Op.Paths != nil || x.Digest == nil {
					t.Errorf("%+v", x)
				}
			}},
		{name: "multi", b: entry(jute.OpMulti, func(e *jute.Encoder) {
			e.Int(2)
			e.Int(int32(jute.OpCheck))
			var c jute.Encoder
			c.String("/a")
			c.Int(3)
			e.Buffer(c.Bytes())
			e.Int(int32(jute.OpError))
			var er jute.Encoder
			er.Int(int32(jute.NoNode))
			e.Buffer(er.Bytes())
		}), check: func(t *testing.T, x *Txn) {
			if len(x.Multi) != 2 || x.Multi[0].Version != 3 || x.Multi[1].Err != jute.NoNode {
				t.Errorf("%+v", x.Multi)
			}
		}},
		{name: "session txn in a multi", b: entry(jute.OpMulti, func(e *jute.Encoder) {
			e.Int(1)
			e.Int(int32(jute.OpCreateSession))
			e.Buffer([]byte{0, 0, 0, 1})
		}), wantErr: ErrUnsupportedTxn},
		{name: "multi element with bytes left", b: entry(jute.OpMulti, func(e *jute.Encoder) {
			e.Int(1)
			e.Int(int32(jute.OpError))
			e.Buffer([]byte{0, 0, 0, 1, 9})
		}), wantErr: ErrBadLog},
		{name: "bytes after the record", b: entry(jute.OpDelete, func(e *jute.Encoder) { e.String("/a"); e.Int(1) }),
			wantErr: ErrBadLog},
		{name: "huge ACL count", b: entry(jute.OpSetACL, func(e *jute.Encoder) { e.String("/a"); e.Int(1 << 30) }),
			wantErr: ErrBadLog},
		{name: "TTL out of range", b: entry(jute.OpCreateTTL, func(e *jute.Encoder) {
			e.String("/a")
			e.Buffer(nil)
			e.Int(1)
			jute.OpenACLUnsafe[0].Encode(e)
			e.Int(1)
			e.Long(0)
		}), wantErr: ErrBadLog},
		{name: "unknown type", b: entry(jute.OpGetData, func(e *jute.Encoder) { e.String("/a") }), wantErr: ErrUnsupportedTxn},
		{name: "short header", b: []byte{1, 2, 3}, wantErr: ErrBadLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := DecodeTxn(tc.b)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, x)
		})
	}
}

// TestDecodeRecordedLogs decodes every entry ZooKeeper 3.8 wrote in the
// test data; each but the error txns carries a digest of version 2.
func TestDecodeRecordedLogs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testdata, "log.*"))
	n := 0
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		err = ReadLogEntries(f, filepath.Base(p), func(b []byte) error {
			x, err := DecodeTxn(b)
			if err != nil {
				return err
			}
			if x.Header.Type != jute.OpError && (x.Digest == nil || x.Digest.Version != 2) {
				t.Errorf("zxid %#x (%s): digest %+v", x.Header.Zxid, x.Header.Type, x.Digest)
			}
			n++
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 50 {
		t.Fatalf("only %d entries", n)
	}
}

// FuzzDecodeTxn: any bytes decode or give an error, never a panic.
func FuzzDecodeTxn(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(testdata, "log.*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		ReadLogEntries(bytes.NewReader(b), "seed", func(e []byte) error {
			f.Add(e)
			return nil
		})
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := DecodeTxn(b)
		if err != nil {
			return
		}
		for _, op := range x.Multi {
			if !multiElement(op.Type) {
				t.Fatalf("multi element of type %s accepted", op.Type)
			}
		}
	})
}
