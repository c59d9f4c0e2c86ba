package server

import "encoding/binary"

// fourLetterWords are the commands recognised as the first four bytes of a
// connection; the Operator writes their replies (operator.go).
var fourLetterWords = map[string]bool{
	"ruok": true, "srvr": true, "stat": true, "envi": true, "conf": true, "cons": true,
	"crst": true, "srst": true, "mntr": true, "isro": true, "dirs": true, "dump": true,
	"wchs": true, "wchc": true, "wchp": true, "gtmk": true, "stmk": true, "hash": true,
}

// fourLetterWord interprets a frame length as a command name.
func fourLetterWord(n int32) (string, bool) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	cmd := string(b[:])
	return cmd, fourLetterWords[cmd]
}
