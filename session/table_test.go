package session

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestTableOps(t *testing.T) {
	tb := NewTable()
	tb.Add(3, 4000)
	tb.Add(1, 10000)
	tb.Add(2, 6000)
	tb.Add(3, 5000) // idempotent: updates timeout
	if got := tb.Len(); got != 3 {
		t.Fatalf("Len = %d, want 3", got)
	}
	if got, ok := tb.Get(3); !ok || got != (Info{ID: 3, Timeout: 5000}) {
		t.Fatalf("Get(3) = %+v, %v", got, ok)
	}
	if _, ok := tb.Get(9); ok {
		t.Fatal("Get(9) found a missing session")
	}
	want := []Info{{1, 10000}, {2, 6000}, {3, 5000}}
	if got := tb.All(); !reflect.DeepEqual(got, want) {
		t.Fatalf("All = %+v, want %+v", got, want)
	}
	if !tb.Remove(2) {
		t.Fatal("Remove(2) = false")
	}
	if tb.Remove(2) {
		t.Fatal("second Remove(2) = true")
	}
	if got := tb.All(); !reflect.DeepEqual(got, []Info{{1, 10000}, {3, 5000}}) {
		t.Fatalf("All after remove = %+v", got)
	}
}

func TestTableWriteGolden(t *testing.T) {
	tb := NewTable()
	tb.Add(0x0100000000000002, 30000)
	tb.Add(-2, 4000) // sorts first: ids are signed
	tb.Add(0x0100000000000001, 10000)
	var buf bytes.Buffer
	n, err := tb.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n != 4+3*12+4 {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "table.hex"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(strings.Fields(string(golden)), "")
	if got := hex.EncodeToString(buf.Bytes()); got != want {
		t.Fatalf("encoding\n got %s\nwant %s", got, want)
	}
}

func TestTableRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   []Info
	}{
		{"empty", nil},
		{"one", []Info{{0x0100000000000001, 4000}}},
		{"many", []Info{{-5, 1}, {0, 0}, {7, -3}, {1 << 62, 40000}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := NewTable()
			for _, s := range tt.in {
				tb.Add(s.ID, s.Timeout)
			}
			var buf bytes.Buffer
			if _, err := tb.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			buf.WriteString("trailer") // ReadTable must stop at the table's end
			got, err := ReadTable(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.All(), tb.All()) {
				t.Fatalf("round trip = %+v, want %+v", got.All(), tb.All())
			}
			if rest := buf.String(); rest != "trailer" {
				t.Fatalf("ReadTable consumed too much; left %q", rest)
			}
		})
	}
}

func TestReadTableCorrupt(t *testing.T) {
	tests := []struct {
		name string
		hex  string
	}{
		{"empty input", ""},
		{"short count", "0000"},
		{"negative count", "ffffffff"},
		{"huge count, no entries", "7fffffff"},
		{"truncated entry", "00000001" + "0100000000000001" + "0000"},
		{"duplicate id", "00000002" + "0000000000000001" + "00000fa0" + "0000000000000001" + "00000fa0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ReadTable(bytes.NewReader(b)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ReadTable error = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestTableConcurrentReaders(t *testing.T) {
	tb := NewTable()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range int64(500) {
			tb.Add(i, int32(i))
			if i%3 == 0 {
				tb.Remove(i / 2)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 500 {
			_ = tb.All()
			_, _ = tb.Get(1)
			_ = tb.Len()
			var buf bytes.Buffer
			_, _ = tb.WriteTo(&buf)
		}
	}()
	wg.Wait()
}

func FuzzReadTable(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Add([]byte{0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0x0f, 0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		tb, err := ReadTable(r)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// The session section, then the owner section's count and entries.
		consumed, sessionsEnd := len(data)-r.Len(), 4+12*tb.Len()
		owners := int(binary.BigEndian.Uint32(data[sessionsEnd:]))
		if consumed != sessionsEnd+4+16*owners {
			t.Fatalf("consumed %d bytes for %d sessions and %d owners", consumed, tb.Len(), owners)
		}
		var buf bytes.Buffer
		if _, err := tb.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		again, err := ReadTable(&buf)
		if err != nil {
			t.Fatalf("re-read of own encoding: %v", err)
		}
		if !reflect.DeepEqual(again.All(), tb.All()) {
			t.Fatal("re-encoding changed the table")
		}
	})
}

func TestTableOwnersRoundTrip(t *testing.T) {
	tb := NewTable()
	tb.Add(1, 4000)
	tb.Add(2, 4000)
	if !tb.SetOwner(2, 3) || tb.SetOwner(9, 1) {
		t.Fatal("SetOwner on known/unknown sessions")
	}
	var buf bytes.Buffer
	if _, err := tb.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTable(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Owner(1) != 0 || got.Owner(2) != 3 || buf.Len() != 0 {
		t.Fatalf("owners after round trip: %d %d (left %d bytes)", got.Owner(1), got.Owner(2), buf.Len())
	}
	tb.Add(2, 5000) // a timeout update keeps the owner
	if tb.Owner(2) != 3 {
		t.Fatal("Add dropped the owner")
	}
}
