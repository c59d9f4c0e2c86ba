package watch

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// writers are the three four-letter words, by name.
var writers = map[string]func(io.Writer, *Registry) error{
	"wchs": WriteWCHS, "wchc": WriteWCHC, "wchp": WriteWCHP,
}

// TestWriteGolden rebuilds the state of the captured 3.8 samples (one
// session with data watches on /app and /app/x; its child watch must not
// show) and compares the bytes with testdata/<cmd>.golden, captured from
// a standalone Apache ZooKeeper 3.8.
func TestWriteGolden(t *testing.T) {
	r := NewRegistry()
	w := &fakeConn{id: 0x1000012581c0000}
	r.Add(w, "/app", Data)
	r.Add(w, "/app/x", Exist)
	r.Add(w, "/app", Child)
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", name+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := write(&buf, r); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s output\n%q\nwant\n%q", name, buf.Bytes(), want)
			}
		})
	}
}

// TestWriteFormats covers states the samples do not: empty registry,
// several sessions, a negative session id, and ZooKeeper's habit of listing
// a connection whose data watches have all fired.
func TestWriteFormats(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *Registry)
		want  map[string]string
	}{{
		name:  "empty",
		setup: func(*Registry) {},
		want: map[string]string{
			"wchs": "0 connections watching 0 paths\nTotal watches:0\n",
			"wchc": "\n",
			"wchp": "\n",
		},
	}, {
		name: "several sessions, sorted; persistent and recursive count once per path",
		setup: func(r *Registry) {
			a, b, neg := &fakeConn{id: 0x20}, &fakeConn{id: 0x3}, &fakeConn{id: -2}
			r.Add(a, "/b", Persistent)
			r.Add(a, "/b", Data)
			r.Add(a, "/a", PersistentRecursive)
			r.Add(b, "/b", Exist)
			r.Add(b, "/c", Child) // child table: not reported
			r.Add(neg, "/a", Data)
		},
		want: map[string]string{
			"wchs": "3 connections watching 2 paths\nTotal watches:4\n",
			"wchc": "0x3\n\t/b\n0x20\n\t/a\n\t/b\n0xfffffffffffffffe\n\t/a\n\n",
			"wchp": "/a\n\t0x20\n\t0xfffffffffffffffe\n/b\n\t0x3\n\t0x20\n\n",
		},
	}, {
		name: "fired connection still listed, without paths",
		setup: func(r *Registry) {
			a := &fakeConn{id: 0x1}
			r.Add(a, "/x", Data)
			r.Add(a, "/y", Child)
			r.Trigger([]Event{changed("/x")}, 2)
		},
		want: map[string]string{
			"wchs": "1 connections watching 0 paths\nTotal watches:0\n",
			"wchc": "0x1\n\n",
			"wchp": "\n",
		},
	}, {
		name: "removeWatches emptying the data table unlists the connection",
		setup: func(r *Registry) {
			a := &fakeConn{id: 0x1}
			r.Add(a, "/x", Data)
			r.Add(a, "/y", Data)
			r.Add(a, "/z", Child)
			r.Trigger([]Event{changed("/x")}, 2)
			r.Remove(a, "/y", 2)
		},
		want: map[string]string{
			"wchs": "0 connections watching 0 paths\nTotal watches:0\n",
			"wchc": "\n",
			"wchp": "\n",
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			tc.setup(r)
			checkInvariants(t, r)
			for _, name := range slices.Sorted(maps.Keys(writers)) {
				var buf bytes.Buffer
				if err := writers[name](&buf, r); err != nil {
					t.Fatal(err)
				}
				if buf.String() != tc.want[name] {
					t.Errorf("%s = %q, want %q", name, buf.String(), tc.want[name])
				}
			}
		})
	}
}

func TestReportsMaps(t *testing.T) {
	r := NewRegistry()
	a, b := &fakeConn{id: 7}, &fakeConn{id: 5}
	a2 := &fakeConn{id: 7} // a second connection of session 7 (reconnect race)
	r.Add(a, "/p", Data)
	r.Add(a, "/q", Persistent)
	r.Add(a2, "/p", Exist)
	r.Add(a2, "/r", Data)
	r.Add(b, "/q", Child)
	r.Add(b, "/p", PersistentRecursive)

	byConn := r.ByConnection()
	wantConn := map[int64][]string{7: {"/p", "/q", "/r"}, 5: {"/p"}}
	if !maps.EqualFunc(byConn, wantConn, slices.Equal) {
		t.Errorf("ByConnection = %v, want %v", byConn, wantConn)
	}
	byPath := r.ByPath()
	wantPath := map[string][]int64{"/p": {5, 7}, "/q": {7}, "/r": {7}}
	if !maps.EqualFunc(byPath, wantPath, slices.Equal) {
		t.Errorf("ByPath = %v, want %v", byPath, wantPath)
	}
	if c, p, n := r.Summary(); c != 3 || p != 3 || n != 5 {
		t.Errorf("Summary = %d, %d, %d; want 3, 3, 5", c, p, n)
	}
	if got := r.Count(); got != 7 { // 5 data + a's persistent child + b's child
		t.Errorf("Count = %d, want 7", got)
	}
}

// failWriter fails every write.
type failWriter struct{}

var errFail = errors.New("fail")

func (failWriter) Write([]byte) (int, error) { return 0, errFail }

func TestWriteErrors(t *testing.T) {
	r := NewRegistry()
	r.Add(&fakeConn{id: 1}, "/a", Data)
	for name, write := range writers {
		if err := write(failWriter{}, r); !errors.Is(err, errFail) {
			t.Errorf("%s: error %v, want wrapping %v", name, err, errFail)
		}
	}
}
