package session

import (
	"encoding/binary"
	"math"
	"sync/atomic"
)

// passwordSecret is the constant ZooKeeper XORs into a session id to seed
// the password generator.
const passwordSecret = 0xB3415C00

// PasswordLen is the length in bytes of a session password.
const PasswordLen = 16

// Negotiate returns the session timeout a server grants for a requested
// timeout: raised to min, then lowered to max, in that order (so a
// request of zero or less gets min, and max wins if min > max).
func Negotiate(requested, min, max int32) int32 {
	t := requested
	if t < min {
		t = min
	}
	if t > max {
		t = max
	}
	return t
}

// Password returns the 16-byte password of session id: the output of
// java.util.Random seeded with id^0xB3415C00, filled by nextBytes (each
// 32-bit draw emitted low byte first). It is a pure function of id, so
// every member derives the same password without replicating it.
func Password(id int64) []byte {
	r := newJavaRandom(id ^ passwordSecret)
	p := make([]byte, PasswordLen)
	for i := 0; i < len(p); i += 4 {
		binary.LittleEndian.PutUint32(p[i:], uint32(r.nextInt()))
	}
	return p
}

// javaRandom is the 48-bit linear congruential generator of
// java.util.Random, enough of it to implement nextInt.
type javaRandom struct{ seed uint64 }

const (
	lcgMultiplier = 0x5DEECE66D
	lcgAddend     = 0xB
	lcgMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (uint64(seed) ^ lcgMultiplier) & lcgMask}
}

// nextInt advances the generator and returns its top 32 bits, as
// Random.next(32) does.
func (r *javaRandom) nextInt() int32 {
	r.seed = (r.seed*lcgMultiplier + lcgAddend) & lcgMask
	return int32(r.seed >> 16)
}

// IDGenerator hands out session ids for one server. It is safe for
// concurrent use.
type IDGenerator struct {
	next atomic.Int64
}

// NewIDGenerator returns a generator whose first id is
// (serverID << 56) | ((nowMillis << 24) >>> 8): the server id in the top
// byte, the low 40 bits of nowMillis in the next five bytes and zero in
// the low two bytes. Later ids count up by one.
//
// ZooKeeper feeds a monotonic elapsed-time clock here; a wall-clock
// reading (time.Now().UnixMilli()) is the better choice because it keeps
// ids unique across restarts.
func NewIDGenerator(serverID int64, nowMillis int64) *IDGenerator {
	g := &IDGenerator{}
	g.next.Store(int64(uint64(nowMillis)<<24>>8) | serverID<<56)
	return g
}

// Next returns a new session id. It never returns 0 (no session) or
// math.MinInt64 (the ephemeralOwner value that marks container nodes).
func (g *IDGenerator) Next() int64 {
	for {
		id := g.next.Add(1) - 1
		if id != 0 && id != math.MinInt64 {
			return id
		}
	}
}
