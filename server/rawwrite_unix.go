//go:build unix

package server

import (
	"errors"
	"syscall"
)

// rawWriter writes to a socket's descriptor without waiting for it. It is
// used only by the goroutine that owns the socket; buf, n and err carry
// one write through fn, which is made once so that a write allocates
// nothing.
type rawWriter struct {
	rc  syscall.RawConn
	buf []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newRawWriter(rc syscall.RawConn) *rawWriter {
	w := &rawWriter{rc: rc}
	w.fn = func(fd uintptr) bool {
		w.n, w.err = syscall.Write(int(fd), w.buf)
		return true // done: never wait for the socket
	}
	return w
}

// tryWrite writes frames with one write system call and returns the frames,
// or the part of a frame, not written. err is a write error; a socket that
// is not writable now (full buffer, deadline passed, closing) is no error:
// everything is returned.
func (w *rawWriter) tryWrite(frames [][]byte) (rest [][]byte, err error) {
	w.buf = frames[0]
	if len(frames) > 1 {
		w.buf = joinFrames(frames)
	}
	defer func() { w.buf, w.err = nil, nil }()
	if w.rc.Write(w.fn) != nil {
		return frames, nil
	}
	if w.err != nil {
		if errors.Is(w.err, syscall.EAGAIN) || errors.Is(w.err, syscall.EINTR) {
			return frames, nil
		}
		return nil, w.err
	}
	return unwritten(frames, w.n), nil
}
