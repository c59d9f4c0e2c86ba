package sasl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrJAASSyntax means a JAAS configuration file does not parse.
var ErrJAASSyntax = errors.New("sasl: JAAS syntax error")

// maxJAASSize bounds the JAAS file read.
const maxJAASSize = 1 << 20

// LoginModule is one entry of a JAAS section: the module's class, its
// control flag, and its options (name=value, values unquoted).
type LoginModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// JAAS is a parsed JAAS configuration: its sections by name. A name seen
// twice adds its modules to the earlier ones, as Java's ConfigFile does.
type JAAS map[string][]LoginModule

// LoadJAAS reads and parses the JAAS file at path.
func LoadJAAS(path string) (JAAS, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sasl: JAAS file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxJAASSize+1))
	if err != nil {
		return nil, fmt.Errorf("sasl: JAAS file %s: %w", path, err)
	}
	if len(data) > maxJAASSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrJAASSyntax, path, maxJAASSize)
	}
	cfg, err := ParseJAAS(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseJAAS parses the text of a JAAS configuration file:
//
//	Name { class flag name=value ...; ... };
//
// Comments are // to the end of the line and /* ... */. Values are words or
// double-quoted strings. The flag is one of required, requisite,
// sufficient, optional (any case). ${property} expansion is not done.
func ParseJAAS(text string) (JAAS, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	p := &jaasParser{toks: toks}
	cfg := JAAS{}
	for !p.done() {
		name, modules, err := p.section()
		if err != nil {
			return nil, err
		}
		cfg[name] = append(cfg[name], modules...)
	}
	return cfg, nil
}

// Users returns the DigestLoginModule users of a section: every option
// named user_NAME of any of its modules, as ZooKeeper's server callback
// handler collects them. A later entry for a name replaces an earlier one.
func (j JAAS) Users(section string) map[string]string {
	users := map[string]string{}
	for _, m := range j[section] {
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, "user_"); ok {
				users[name] = v
			}
		}
	}
	return users
}

// token is one lexical unit: a word, a quoted string, or one of { } ; =.
type token struct {
	text   string
	quoted bool
	line   int
}

// tokenize splits JAAS text into tokens, dropping comments.
func tokenize(s string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%w: line %d: unterminated comment", ErrJAASSyntax, line)
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '"':
			text, n, err := quoted(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %w", ErrJAASSyntax, line, err)
			}
			toks = append(toks, token{text: text, quoted: true, line: line})
			line += strings.Count(s[i:i+n], "\n")
			i += n
		case strings.ContainsRune("{};=", rune(c)):
			toks = append(toks, token{text: string(c), line: line})
			i++
		default:
			j := i
			for j < len(s) && !strings.ContainsRune("{};=\" \t\r\n\f", rune(s[j])) && !strings.HasPrefix(s[j:], "//") && !strings.HasPrefix(s[j:], "/*") {
				j++
			}
			toks = append(toks, token{text: s[i:j], line: line})
			i = j
		}
	}
	return toks, nil
}

// quoted reads a double-quoted string at the start of s, with backslash
// escapes, and returns its value and the bytes it spans.
func quoted(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, errors.New("unterminated quoted string")
}

// jaasParser walks the tokens of a JAAS file.
type jaasParser struct {
	toks []token
	pos  int
}

func (p *jaasParser) done() bool { return p.pos >= len(p.toks) }

// next returns the next token, or an error at the end of the input.
func (p *jaasParser) next(what string) (token, error) {
	if p.done() {
		return token{}, fmt.Errorf("%w: unexpected end of file, expected %s", ErrJAASSyntax, what)
	}
	t := p.toks[p.pos]
	p.pos++
	return t, nil
}

// expect consumes a punctuation token.
func (p *jaasParser) expect(punct string) error {
	t, err := p.next(punct)
	if err != nil {
		return err
	}
	if t.quoted || t.text != punct {
		return fmt.Errorf("%w: line %d: expected %q, found %q", ErrJAASSyntax, t.line, punct, t.text)
	}
	return nil
}

// word consumes a bare word (not punctuation).
func (p *jaasParser) word(what string) (token, error) {
	t, err := p.next(what)
	if err != nil {
		return t, err
	}
	if !t.quoted && strings.Contains("{};=", t.text) {
		return t, fmt.Errorf("%w: line %d: expected %s, found %q", ErrJAASSyntax, t.line, what, t.text)
	}
	return t, nil
}

// section parses Name { modules } ;
func (p *jaasParser) section() (string, []LoginModule, error) {
	name, err := p.word("a section name")
	if err != nil {
		return "", nil, err
	}
	if err := p.expect("{"); err != nil {
		return "", nil, err
	}
	var modules []LoginModule
	for {
		if !p.done() && p.toks[p.pos].text == "}" && !p.toks[p.pos].quoted {
			p.pos++
			break
		}
		m, err := p.module()
		if err != nil {
			return "", nil, err
		}
		modules = append(modules, m)
	}
	if err := p.expect(";"); err != nil {
		return "", nil, err
	}
	return name.text, modules, nil
}

// module parses class flag name=value ... ;
func (p *jaasParser) module() (LoginModule, error) {
	class, err := p.word("a login module class")
	if err != nil {
		return LoginModule{}, err
	}
	flag, err := p.word("a control flag")
	if err != nil {
		return LoginModule{}, err
	}
	switch strings.ToLower(flag.text) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return LoginModule{}, fmt.Errorf("%w: line %d: bad control flag %q", ErrJAASSyntax, flag.line, flag.text)
	}
	m := LoginModule{Class: class.text, Flag: strings.ToLower(flag.text), Options: map[string]string{}}
	for {
		t, err := p.next("an option or ';'")
		if err != nil {
			return m, err
		}
		if !t.quoted && t.text == ";" {
			return m, nil
		}
		if err := p.expect("="); err != nil {
			return m, err
		}
		v, err := p.word("an option value")
		if err != nil {
			return m, err
		}
		m.Options[t.text] = v.text
	}
}
