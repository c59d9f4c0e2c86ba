package acl

import (
	"strings"
	"unicode/utf8"
)

// This file reproduces the few pieces of Java string handling whose quirks
// decide, in ZooKeeper, whether an ACL id is valid or matches.

// javaParseInt parses s the way java.lang.Integer.parseInt(s, radix) does for
// ASCII input: an optional leading '+' or '-', then at least one digit of the
// radix, and the result must fit in an int32. Unicode digits, which Java also
// accepts, are not.
func javaParseInt(s string, radix int) (int32, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= radix {
			return 0, false
		}
		v = v*int64(radix) + int64(d)
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -(1<<31) {
		return 0, false
	}
	return int32(v), true
}

// digitValue is the value of an ASCII digit or letter in radices up to 36.
func digitValue(c byte) (int, bool) {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0'), true
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10, true
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// javaSplit behaves like Java's String.split(sep) with a literal, non-empty
// separator and no limit: trailing empty strings are removed, and input
// without the separator yields a one-element result (even when empty).
func javaSplit(s, sep string) []string {
	parts := strings.Split(s, sep)
	if len(parts) == 1 {
		return parts
	}
	n := len(parts)
	for n > 0 && parts[n-1] == "" {
		n--
	}
	return parts[:n]
}

// isJavaLineTerminator reports whether r ends a line for java.util.regex's
// '.' (which matches anything else when DOTALL is off).
func isJavaLineTerminator(r rune) bool {
	switch r {
	case '\n', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// javaReplaceColonTail reproduces Java's s.replaceAll(":.*", ":x"): every run
// from a ':' up to the end of its line becomes ":x".
func javaReplaceColonTail(s string) string {
	var b strings.Builder
	inTail := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case inTail && isJavaLineTerminator(r):
			inTail = false
			b.WriteString(s[i : i+size])
		case inTail:
		case r == ':':
			inTail = true
			b.WriteString(":x")
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
