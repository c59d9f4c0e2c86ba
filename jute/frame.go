package jute

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned for a frame length outside 0..max.
var ErrFrameTooLarge = errors.New("jute: frame length out of range")

// ReadFrameLength reads a 4-byte frame length from r.
func ReadFrameLength(r io.Reader) (int32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(hdr[:])), nil
}

// ReadFramePayload reads a frame's payload of length n into buf (grown as
// needed) after checking 0 <= n <= max. It returns the payload slice.
func ReadFramePayload(r io.Reader, n int32, max int, buf []byte) ([]byte, error) {
	if n < 0 || int(n) > max {
		return nil, fmt.Errorf("%w: %d (limit %d)", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			// The length was read, so the peer closed inside the frame.
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// ReadFrame reads one length-prefixed frame of at most max payload bytes.
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	n, err := ReadFrameLength(r)
	if err != nil {
		return nil, err
	}
	return ReadFramePayload(r, n, max, buf)
}

// AppendFrame appends one frame holding the concatenated records to dst and
// returns the extended slice. A nil record adds nothing (an error reply
// whose body was left out is just its header).
func AppendFrame(dst []byte, recs ...Record) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	e := Encoder{buf: dst}
	for _, r := range recs {
		if r != nil {
			r.Encode(&e)
		}
	}
	dst = e.buf
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
