package acl

import (
	"fmt"
	"strings"

	"github.com/zkserverd/zkserverd/jute"
)

// permLetters lists the permission letters in the order zkCli prints them.
var permLetters = [...]struct {
	letter byte
	bit    int32
}{
	{'c', jute.PermCreate},
	{'d', jute.PermDelete},
	{'r', jute.PermRead},
	{'w', jute.PermWrite},
	{'a', jute.PermAdmin},
}

// ParsePerms parses zkCli permission letters (any order, repeats allowed):
// c=CREATE, d=DELETE, r=READ, w=WRITE, a=ADMIN. "" is 0. Any other
// character is an error (zkCli only warns about it).
func ParsePerms(s string) (int32, error) {
	var perms int32
	for i := 0; i < len(s); i++ {
		bit, ok := permBit(s[i])
		if !ok {
			return 0, fmt.Errorf("%w: %q in %q", ErrBadPerms, s[i], s)
		}
		perms |= bit
	}
	return perms, nil
}

// permBit is the permission bit of a letter.
func permBit(c byte) (int32, bool) {
	for _, p := range permLetters {
		if p.letter == c {
			return p.bit, true
		}
	}
	return 0, false
}

// FormatPerms prints permission bits as zkCli does ("cdrwa" for ALL);
// bits outside ALL are not shown.
func FormatPerms(perms int32) string {
	var b strings.Builder
	for _, p := range permLetters {
		if perms&p.bit != 0 {
			b.WriteByte(p.letter)
		}
	}
	return b.String()
}
