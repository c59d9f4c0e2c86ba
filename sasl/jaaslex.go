package sasl

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// jaasLexer splits a JAAS file into tokens as java.io.StreamTokenizer does
// with the settings of the JDK's ConfigFile: word characters are letters,
// U+00A0 and above, and $ _ - *; digits, '.' and '-' start numbers (which
// ConfigFile then refuses); '"' and '\” quote; // and /* */ are comments,
// and so is a lone '/' up to the end of the line; other characters are
// tokens by themselves. line counts every line break, also those inside
// comments.
type jaasLexer struct {
	s    string
	pos  int
	line int
}

// jaasTokenKind is what a token is.
type jaasTokenKind int

const (
	tokEOF jaasTokenKind = iota
	tokWord
	tokQuoted // a "string"
	tokNumber
	tokPunct // any other single character, '\'' strings included
)

// jaasToken is one token and the line it starts on.
type jaasToken struct {
	kind  jaasTokenKind
	text  string // a word's or string's value, a number as written
	punct rune
	line  int
}

// String describes the token for error messages.
func (t jaasToken) String() string {
	switch t.kind {
	case tokWord:
		return strconv.Quote(t.text)
	case tokQuoted:
		return "the string " + strconv.Quote(t.text)
	case tokNumber:
		return "the number " + t.text + " (quote it)"
	case tokPunct:
		if t.punct == '\'' {
			return "a '-quoted string (use \")"
		}
		return strconv.QuoteRune(t.punct)
	}
	return "the end of the file"
}

// isWordStart and isWordPart are StreamTokenizer's alphabetic class and
// its alphabetic-or-numeric class under ConfigFile's settings.
func isWordStart(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0xA0 || strings.ContainsRune("$_-*", r)
}

func isWordPart(r rune) bool { return isWordStart(r) || r >= '0' && r <= '9' || r == '.' }

// peek returns the rune at pos (utf8.RuneError, 0 at the end).
func (l *jaasLexer) peek() (rune, int) {
	if l.pos >= len(l.s) {
		return utf8.RuneError, 0
	}
	return utf8.DecodeRuneInString(l.s[l.pos:])
}

// next returns the next token; line breaks are counted, not returned.
func (l *jaasLexer) next() jaasToken {
	for {
		r, n := l.peek()
		if n == 0 {
			return jaasToken{kind: tokEOF, line: l.line}
		}
		switch {
		case r == '\n':
			l.line++
			l.pos += n
		case r == '\r':
			l.line++
			l.pos += n
			if strings.HasPrefix(l.s[l.pos:], "\n") {
				l.pos++
			}
		case r <= ' ':
			l.pos += n
		case r == '/':
			l.comment()
		case r >= '0' && r <= '9' || r == '.' || r == '-':
			return l.number()
		case isWordStart(r):
			return l.word()
		case r == '"':
			return l.quoted()
		default:
			l.pos += n
			return jaasToken{kind: tokPunct, punct: r, line: l.line}
		}
	}
}

// comment skips a comment starting at '/': /* to */ (or to the end of
// the file), otherwise to the end of the line.
func (l *jaasLexer) comment() {
	if strings.HasPrefix(l.s[l.pos:], "/*") {
		end := strings.Index(l.s[l.pos+2:], "*/")
		if end < 0 {
			end = len(l.s) - l.pos - 2
		} else {
			end += 2
		}
		body := l.s[l.pos : l.pos+2+end]
		l.line += strings.Count(body, "\n") + strings.Count(body, "\r") - strings.Count(body, "\r\n")
		l.pos += 2 + end
		return
	}
	for l.pos < len(l.s) && l.s[l.pos] != '\n' && l.s[l.pos] != '\r' {
		l.pos++
	}
}

// number reads a number (digits with at most one '.', perhaps after a
// '-'). A '-' not followed by a digit or '.' is a token by itself, as
// StreamTokenizer makes it.
func (l *jaasLexer) number() jaasToken {
	start := l.pos
	i := l.pos
	if l.s[i] == '-' {
		i++
		if i >= len(l.s) || !(l.s[i] >= '0' && l.s[i] <= '9' || l.s[i] == '.') {
			l.pos = i
			return jaasToken{kind: tokPunct, punct: '-', line: l.line}
		}
	}
	dot := false
	for i < len(l.s) && (l.s[i] >= '0' && l.s[i] <= '9' || l.s[i] == '.' && !dot) {
		dot = dot || l.s[i] == '.'
		i++
	}
	l.pos = i
	return jaasToken{kind: tokNumber, text: l.s[start:i], line: l.line}
}

// word reads a word.
func (l *jaasLexer) word() jaasToken {
	start := l.pos
	for {
		r, n := l.peek()
		if n == 0 || !isWordPart(r) {
			break
		}
		l.pos += n
	}
	return jaasToken{kind: tokWord, text: l.s[start:l.pos], line: l.line}
}

// quoted reads a "string": it ends at the closing quote or before the end
// of its line; \a \b \f \n \r \t \v, octal \ooo and \<any> escape.
func (l *jaasLexer) quoted() jaasToken {
	t := jaasToken{kind: tokQuoted, line: l.line}
	var b strings.Builder
	l.pos++
	for l.pos < len(l.s) {
		r, n := l.peek()
		if r == '"' {
			l.pos += n
			break
		}
		if r == '\n' || r == '\r' {
			break
		}
		l.pos += n
		if r != '\\' {
			b.WriteRune(r)
			continue
		}
		b.WriteRune(l.escape())
	}
	t.text = b.String()
	return t
}

// escape reads what follows a backslash in a string.
func (l *jaasLexer) escape() rune {
	r, n := l.peek()
	if n == 0 {
		return utf8.RuneError
	}
	l.pos += n
	if r == '\n' || r == '\r' && !strings.HasPrefix(l.s[l.pos:], "\n") {
		l.line++ // an escaped line break continues the string
	}
	if r >= '0' && r <= '7' {
		v := r - '0'
		max := 3
		if r > '3' {
			max = 2 // \477 is \47 then '7'
		}
		for i := 1; i < max && l.pos < len(l.s) && l.s[l.pos] >= '0' && l.s[l.pos] <= '7'; i++ {
			v = v*8 + rune(l.s[l.pos]-'0')
			l.pos++
		}
		return v
	}
	if e, ok := map[rune]rune{'a': 7, 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[r]; ok {
		return e
	}
	return r
}
