//go:build !unix

package server

import "syscall"

// rawWriter writes nothing where the raw descriptor is not a Unix one: the
// connection's writer sends every frame.
type rawWriter struct{}

func newRawWriter(syscall.RawConn) *rawWriter { return &rawWriter{} }

func (*rawWriter) tryWrite(frames [][]byte) (rest [][]byte, err error) {
	return frames, nil
}
