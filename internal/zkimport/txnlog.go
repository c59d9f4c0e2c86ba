package zkimport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
)

// maxTxn bounds one logged transaction; ZooKeeper's own limit
// (jute.maxbuffer plus headroom) is far smaller by default.
const maxTxn = 1 << 30

// endOfRecord follows every logged transaction ('B').
const endOfRecord = 0x42

// logReader iterates over the entries of one log.<zxid> file.
type logReader struct {
	r    *bufio.Reader
	name string
	pos  int64
	onIO func(int64)
}

// newLogReader checks the file header (magic "ZKLG", version 2, dbid).
func newLogReader(r io.Reader, name string, onIO func(int64)) (*logReader, error) {
	l := &logReader{r: bufio.NewReaderSize(r, 256<<10), name: name, onIO: onIO}
	var hdr [16]byte
	if _, err := io.ReadFull(l.r, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %w", ErrBadLog, name, err)
	}
	l.advance(16)
	magic, version := int32(binary.BigEndian.Uint32(hdr[:])), int32(binary.BigEndian.Uint32(hdr[4:]))
	if magic != logMagic || version != fileVersion {
		return nil, fmt.Errorf("%w: %s: magic %#x version %d", ErrBadLog, name, magic, version)
	}
	return l, nil
}

func (l *logReader) advance(n int) {
	l.pos += int64(n)
	if l.onIO != nil {
		l.onIO(int64(n))
	}
}

// next returns the bytes of the next transaction (TxnHeader, record and
// optional digest), or io.EOF where ZooKeeper stops reading the file: at the
// end, at the zero padding of a preallocated file, or at a partial last
// entry. A checksum mismatch or an impossible length is an error, as it is
// for ZooKeeper.
func (l *logReader) next() ([]byte, error) {
	var head [12]byte
	if _, err := io.ReadFull(l.r, head[:]); err != nil {
		return nil, io.EOF
	}
	l.advance(12)
	crc := int64(binary.BigEndian.Uint64(head[:]))
	n := int32(binary.BigEndian.Uint32(head[8:]))
	switch {
	case n == 0 || n == -1:
		return nil, io.EOF
	case n < 0 || n > maxTxn:
		return nil, fmt.Errorf("%w: %s: entry length %d at byte %d", ErrBadLog, l.name, n, l.pos-4)
	}
	body, err := readChunked(l.r, int(n))
	if err != nil {
		return nil, io.EOF // torn write at the tail
	}
	l.advance(len(body))
	eor, err := l.r.ReadByte()
	if err != nil || eor != endOfRecord {
		return nil, io.EOF // partial last transaction
	}
	l.advance(1)
	if got := int64(adler32.Checksum(body)); got != crc {
		return nil, fmt.Errorf("%w: %s: checksum mismatch at byte %d", ErrBadLog, l.name, l.pos)
	}
	return body, nil
}

// readChunked reads exactly n bytes, allocating only as data arrives.
func readChunked(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	b := make([]byte, 0, min(n, chunk))
	for len(b) < n {
		k := min(n-len(b), max(chunk, len(b)))
		start := len(b)
		b = append(b, make([]byte, k)...)
		if _, err := io.ReadFull(r, b[start:]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ReadLogEntries calls fn with the bytes of each transaction of one
// ZooKeeper log.<zxid> stream (TxnHeader, record and optional digest, as
// DecodeTxn takes them), in file order, stopping where ZooKeeper stops
// reading (the end, the zero padding, a torn last entry). A bad header or
// checksum is an error wrapping ErrBadLog; an error from fn is returned
// as is. An empty stream holds no entries.
func ReadLogEntries(r io.Reader, name string, fn func(entry []byte) error) error {
	lr, err := newLogReader(r, name, nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	for {
		body, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(body); err != nil {
			return err
		}
	}
}
