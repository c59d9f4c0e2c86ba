package server

import (
	"github.com/zkserverd/zkserverd/jute"
)

// replyFrame builds a header-only reply, or a reply with body when err is OK.
func replyFrame(xid int32, zxid int64, err jute.Code, body jute.Record) []byte {
	h := jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: err}
	if err != jute.OK || body == nil {
		return jute.AppendFrame(make([]byte, 0, replyHeaderSize), &h)
	}
	return jute.AppendFrame(make([]byte, 0, replySizeHint(body)), &h, body)
}

// errorFrame builds an error reply that carries a body anyway (body may
// be nil: header only), as ZooKeeper sends a rejected multiRead with the
// multi end marker.
func errorFrame(xid int32, zxid int64, err jute.Code, body jute.Record) []byte {
	h := jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: err}
	if body == nil {
		return jute.AppendFrame(make([]byte, 0, replyHeaderSize), &h)
	}
	return jute.AppendFrame(make([]byte, 0, replyHeaderSize+16), &h, body)
}

// replyHeaderSize is the size of a header-only reply frame: the frame
// length, xid, zxid and err.
const replyHeaderSize = 4 + 4 + 8 + 4

// replySizeHint guesses the encoded size of a reply frame carrying body:
// exact for getData, the answer of most reads; a small frame otherwise
// (appending grows it when needed).
func replySizeHint(body jute.Record) int {
	if r, ok := body.(*jute.GetDataResponse); ok {
		return replyHeaderSize + 4 + len(r.Data) + jute.StatSize
	}
	return replyHeaderSize + 128
}
