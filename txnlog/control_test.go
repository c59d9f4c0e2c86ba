package txnlog

import (
	"errors"
	"testing"
)

func TestControlRoundTrip(t *testing.T) {
	id := NewEnsembleID()
	cases := []Control{
		{Kind: EntryIdentity, Ensemble: id},
		{Kind: EntryCheckpoint},
		{Kind: EntryDigest, Index: 77, Zxid: 0x300000005, Digest: 0xfeedface12345678},
	}
	for _, c := range cases {
		b := c.Encode()
		if Kind(b) != c.Kind {
			t.Fatalf("Kind = %d, want %d", Kind(b), c.Kind)
		}
		got, err := DecodeControl(b)
		if err != nil || *got != c {
			t.Fatalf("DecodeControl(%+v) = %+v, %v", c, got, err)
		}
		if err := Verify(b); err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if _, err := Decode(b); !errors.Is(err, ErrUnknownEntry) {
			t.Fatalf("Decode of a control entry: %v, want ErrUnknownEntry", err)
		}
		for i := range b {
			bad := append([]byte(nil), b...)
			bad[i] ^= 1
			if _, err := DecodeControl(bad); err == nil {
				t.Fatalf("%+v with byte %d flipped decoded", c, i)
			}
		}
	}
}

func TestEnsembleIDText(t *testing.T) {
	id := NewEnsembleID()
	if id.IsZero() || id == NewEnsembleID() {
		t.Fatal("NewEnsembleID is not random")
	}
	for _, want := range []EnsembleID{id, {}} {
		got, err := ParseEnsembleID(want.String())
		if err != nil || got != want {
			t.Fatalf("ParseEnsembleID(%s) = %v, %v", want, got, err)
		}
	}
	for _, bad := range []string{"xyz", "abcd", id.String() + "00"} {
		if _, err := ParseEnsembleID(bad); err == nil {
			t.Errorf("ParseEnsembleID(%q) accepted", bad)
		}
	}
}

func FuzzDecodeControl(f *testing.F) {
	f.Add((&Control{Kind: EntryDigest, Index: 1, Zxid: 2, Digest: 3}).Encode())
	f.Add((&Control{Kind: EntryIdentity}).Encode())
	f.Add([]byte{EntryCheckpoint, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeControl(b)
		if err != nil {
			return
		}
		if again := c.Encode(); string(again) != string(b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}
