package datatree

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zkserverd/zkserverd/jute"
)

// System node paths, as a fresh ZooKeeper server has them.
const (
	rootPath   = "/"
	procPath   = "/zookeeper"
	quotaPath  = "/zookeeper/quota"
	configPath = "/zookeeper/config"
)

// ValidatePath applies ZooKeeper's PathUtils.validatePath and returns
// jute.BadArguments for an invalid path, jute.OK otherwise.
// ZooKeeper checks UTF-16 code units, so every rune above U+FFFF (it would be
// a surrogate pair) and every invalid UTF-8 sequence (it would decode to
// U+FFFD) is rejected.
func ValidatePath(p string) jute.Code {
	if p == "" || p[0] != '/' {
		return jute.BadArguments
	}
	if len(p) == 1 {
		return jute.OK
	}
	if p[len(p)-1] == '/' {
		return jute.BadArguments
	}
	for i := 1; i < len(p); {
		c := p[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(p[i:])
			if !validPathRune(r, size) {
				return jute.BadArguments
			}
			i += size
			continue
		}
		if !validPathByte(p, i) {
			return jute.BadArguments
		}
		i++
	}
	return jute.OK
}

// validName reports whether name is a valid path component, that is
// whether ValidatePath accepts "/"+name and name holds no '/'.
func validName(name string) bool {
	if name == "" || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); {
		c := name[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(name[i:])
			if !validPathRune(r, size) {
				return false
			}
			i += size
			continue
		}
		if c == '/' || c <= 0x1f || c == 0x7f {
			return false
		}
		i++
	}
	return true
}

// validPathByte checks the ASCII byte p[i] (i >= 1) in its context: no NUL or
// control characters, no empty component, no "." or ".." component. '/' and
// '.' never occur inside a multi-byte UTF-8 sequence, so byte-wise
// neighbours are the same as ZooKeeper's char-wise ones.
func validPathByte(p string, i int) bool {
	c := p[i]
	last := p[i-1]
	atEnd := i+1 == len(p) || p[i+1] == '/'
	switch {
	case c == 0:
		return false
	case c == '/' && last == '/':
		return false
	case c == '.' && last == '.':
		// i >= 2 here because p[0] is '/'.
		return !(p[i-2] == '/' && atEnd)
	case c == '.':
		return !(last == '/' && atEnd)
	case c <= 0x1f || c == 0x7f:
		return false
	}
	return true
}

// validPathRune checks a non-ASCII rune against ZooKeeper's forbidden ranges.
func validPathRune(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size <= 1:
		return false // invalid UTF-8: Java would see U+FFFD
	case r > 0xffff:
		return false // a surrogate pair in UTF-16
	case r >= 0x7f && r <= 0x9f:
		return false
	case r >= 0xd800 && r <= 0xf8ff:
		return false
	case r >= 0xfff0:
		return false
	}
	return true
}

// isSystemPath reports whether p is one of the nodes that can never be
// deleted.
func isSystemPath(p string) bool {
	switch p {
	case rootPath, procPath, quotaPath, configPath:
		return true
	}
	return false
}

// splitParent returns the parent path (text before the last '/', "" for a
// top-level node, which is the root alias) and the child name. ok is false
// when p has no '/'.
func splitParent(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	return p[:i], p[i+1:], true
}

// eventParent is the path ZooKeeper uses for NodeChildrenChanged on parent:
// "/" for the root alias "".
func eventParent(parent string) string {
	if parent == "" {
		return rootPath
	}
	return parent
}

// appendSequence appends v formatted as Java's String.format("%010d", v):
// zero-padded to ten characters, the sign counting towards the width.
func appendSequence(dst []byte, v int32) []byte {
	var digits [12]byte
	abs := int64(v)
	neg := abs < 0
	if neg {
		abs = -abs
	}
	s := strconv.AppendInt(digits[:0], abs, 10)
	width := 10
	if neg {
		dst = append(dst, '-')
		width--
	}
	for n := len(s); n < width; n++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// javaLen returns the length of s in UTF-16 code units, as Java's
// String.length() would report it (ZooKeeper's approximate data size counts
// path lengths that way).
func javaLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r > 0xffff {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}
