package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer is reported when a record needs more bytes than remain.
var ErrShortBuffer = errors.New("jute: short buffer")

// ErrBadLength is reported for a negative (other than -1) or oversized length.
var ErrBadLength = errors.New("jute: bad length")

// Record is a Jute record: it can append itself to an Encoder and read itself
// from a Decoder.
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// Encoder appends Jute primitives to a byte slice. The zero value is ready.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its storage.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Int appends a 4-byte big-endian int.
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long appends an 8-byte big-endian long.
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool appends one byte, 1 for true and 0 for false.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
		return
	}
	e.buf = append(e.buf, 0)
}

// Buffer appends a length-prefixed byte buffer; a nil slice is written as
// the null buffer (length -1), an empty non-nil slice as length 0.
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// String appends a length-prefixed UTF-8 string (never null).
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Strings appends a vector of strings; nil is written as an empty vector,
// as ZooKeeper servers do.
func (e *Encoder) Strings(v []string) {
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Record appends a record.
func (e *Encoder) Record(r Record) { r.Encode(e) }

// Decoder reads Jute primitives from a byte slice with a sticky error.
// It also notes where the first null ustring was (a null string reads as
// "", but ZooKeeper's answer to a null path differs from its answer to an
// empty one).
type Decoder struct {
	buf       []byte
	off       int
	err       error
	strings   int // ustrings read
	firstNull int // 1 + the index among ustrings of the first null one; 0: none
}

// NewDecoder returns a Decoder over b. The decoder never retains more than b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Err returns the first error seen, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Rest returns the unread bytes without consuming them.
func (d *Decoder) Rest() []byte { return d.buf[d.off:] }

// Fail records err as the decoder's error unless one is already set.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.Remaining() {
		d.err = fmt.Errorf("%w: need %d bytes at offset %d, have %d", ErrShortBuffer, n, d.off, d.Remaining())
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a 4-byte big-endian int.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads an 8-byte big-endian long.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads one byte; any non-zero value is true.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	if b == nil {
		return false
	}
	return b[0] != 0
}

// length reads a length prefix and checks it against the remaining bytes,
// so a hostile length can never cause an allocation. -1 returns -1.
func (d *Decoder) length() int {
	n := d.Int()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 || int(n) > d.Remaining() {
		d.err = fmt.Errorf("%w: %d at offset %d with %d bytes left", ErrBadLength, n, d.off-4, d.Remaining())
		return 0
	}
	return int(n)
}

// Buffer reads a length-prefixed buffer. The null buffer (-1) returns nil;
// an empty buffer returns a non-nil empty slice. The result is a copy.
func (d *Decoder) Buffer() []byte {
	n := d.length()
	if n < 0 || d.err != nil {
		return nil
	}
	b := d.take(n)
	if b == nil {
		return nil
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

// String reads a length-prefixed string; the null string reads as ""
// (FirstNullString tells them apart).
func (d *Decoder) String() string {
	n := d.length()
	d.strings++
	if n == -1 && d.firstNull == 0 && d.err == nil {
		d.firstNull = d.strings
	}
	if n <= 0 || d.err != nil {
		return ""
	}
	return string(d.take(n))
}

// FirstNullString reports the index, counted over the ustrings read so far
// in decoding order from 0, of the first null ustring, and whether there
// was one.
func (d *Decoder) FirstNullString() (int, bool) { return d.firstNull - 1, d.firstNull > 0 }

// vectorLen reads a vector count; each element needs at least minSize bytes,
// so a count larger than the remaining bytes allow is rejected before any
// allocation. Null (-1) reads as 0 elements.
func (d *Decoder) vectorLen(minSize int) int {
	n := d.Int()
	if d.err != nil || n == -1 {
		return 0
	}
	if n < 0 || int64(n)*int64(minSize) > int64(d.Remaining()) {
		d.err = fmt.Errorf("%w: vector of %d at offset %d with %d bytes left", ErrBadLength, n, d.off-4, d.Remaining())
		return 0
	}
	return int(n)
}

// Strings reads a vector of strings; a null vector reads as nil.
func (d *Decoder) Strings() []string {
	n := d.vectorLen(4)
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.String())
	}
	return out
}

// Record reads a record.
func (d *Decoder) Record(r Record) { r.Decode(d) }

// Finish reports the decoder's error, or an error if bytes were left over
// and strict is set.
func (d *Decoder) Finish(strict bool) error {
	if d.err != nil {
		return d.err
	}
	if strict && d.Remaining() != 0 {
		return fmt.Errorf("jute: %d trailing bytes", d.Remaining())
	}
	return nil
}

// Encode returns the encoding of r in a new slice.
func Encode(r Record) []byte {
	var e Encoder
	r.Encode(&e)
	return e.buf
}

// Decode decodes b into r and reports any error, including trailing bytes.
func Decode(b []byte, r Record) error {
	d := NewDecoder(b)
	r.Decode(d)
	return d.Finish(true)
}

// SkipBuffer reads past a length-prefixed buffer without copying it.
func (d *Decoder) SkipBuffer() {
	if n := d.length(); n > 0 && d.err == nil {
		d.take(n)
	}
}
