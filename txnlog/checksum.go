package txnlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrChecksum is wrapped by the error for an entry whose bytes do not
// match its checksum: the log holding it is damaged.
var ErrChecksum = errors.New("txnlog: entry checksum mismatch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Seal appends the CRC-32C of entry to it: every entry is sealed once
// complete (a batch after its last transaction, a control entry when
// encoded), and Decode and DecodeControl verify it.
func Seal(entry []byte) []byte {
	return binary.BigEndian.AppendUint32(entry, crc32.Checksum(entry, castagnoli))
}

// verify checks a sealed entry's checksum and returns the entry without it.
func verify(b []byte) ([]byte, error) {
	if len(b) < 2+checksumSize {
		return nil, fmt.Errorf("%w: entry of %d bytes", ErrChecksum, len(b))
	}
	body, sum := b[:len(b)-checksumSize], binary.BigEndian.Uint32(b[len(b)-checksumSize:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: computed %08x, stored %08x", ErrChecksum, got, sum)
	}
	return body, nil
}

// Verify checks an entry's integrity without decoding its transactions:
// the checksum of a sealed entry, the kind and version of any. Entries of
// builds before checksums pass when their kind and version are known.
func Verify(b []byte) error {
	if len(b) < 2 {
		return ErrUnknownEntry
	}
	switch {
	case b[0] == EntryBatch && b[1] == entryVersionPlain:
		return nil
	case b[0] == EntryBatch && b[1] == entryVersion, isControl(b[0]) && b[1] == controlVersion:
		_, err := verify(b)
		return err
	}
	return ErrUnknownEntry
}
