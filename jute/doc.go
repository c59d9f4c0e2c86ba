// Package jute implements the ZooKeeper client wire format: the Jute
// primitive encodings, every request, response and notification record a
// ZooKeeper 3.8/3.9 client can exchange with a server, the opcode, error-code,
// event and flag enumerations, and length-prefixed framing.
//
// Encoding appends to a byte slice (Encoder); decoding reads from one frame's
// bytes with a sticky error (Decoder): every getter returns a zero value once
// an error has been seen, lengths are checked against the bytes that remain
// before anything is allocated, and the caller checks Err once at the end.
// Nothing in this package panics on input or uses reflection.
//
// Records implement Record. Field order and types follow zookeeper.jute, so
// the bytes are identical to Apache ZooKeeper's; see docs/format/wire.md.
package jute
