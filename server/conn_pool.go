package server

import (
	"bufio"
	"net"
)

// readBufferSize is the size of a connection's read buffer.
const readBufferSize = 64 << 10

// readBuffer returns a read buffer for nc, reusing one of an ended
// connection when there is one: connections come and go at a high rate, and
// a fresh 64 KiB buffer for each is most of the cost of accepting one.
func (s *Server) readBuffer(nc net.Conn) *bufio.Reader {
	if br, ok := s.readBuffers.Get().(*bufio.Reader); ok {
		br.Reset(nc)
		return br
	}
	return bufio.NewReaderSize(nc, readBufferSize)
}

// pipelineQueue returns an empty pipeline queue, an ended connection's
// when there is one. A queue of pipelineDepth entries is 8 KiB: under
// session churn, allocating one per connection was more than half of the
// bytes a connect+close cycle allocated.
func (s *Server) pipelineQueue() chan *pending {
	if q, ok := s.pipelines.Get().(chan *pending); ok {
		return q
	}
	return make(chan *pending, pipelineDepth)
}

// releaseReadBuffer gives the read buffer back once the reader is done
// with it.
func (c *conn) releaseReadBuffer() {
	c.br.Reset(nil)
	c.s.readBuffers.Put(c.br)
	c.br = nil
}
