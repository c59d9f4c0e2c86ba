package sasl

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strings"
)

// This file reads JAAS configuration files as the JDK's ConfigFile does:
// its tokenizer (java.io.StreamTokenizer with ConfigFile's settings), its
// grammar, and the ${property} expansion of option values.

// ErrJAASSyntax means a JAAS configuration file does not parse.
var ErrJAASSyntax = errors.New("sasl: JAAS syntax error")

// maxJAASSize bounds the JAAS file read.
const maxJAASSize = 1 << 20

// LoginModule is one entry of a JAAS section: the module's class, its
// control flag, and its options (name=value, values expanded).
type LoginModule struct {
	Class   string
	Flag    string
	Options map[string]string
}

// JAAS is a parsed JAAS configuration: its sections by name.
type JAAS map[string][]LoginModule

// Properties are the Java system properties ${name} expands to.
type Properties map[string]string

// JavaProperties returns the system properties every JVM has that a JAAS
// file may name (user.home, user.name, user.dir, java.io.tmpdir, the
// separators, os.name), as this process would see them, overlaid with
// extra (the -D properties of SERVER_JVMFLAGS and JVMFLAGS).
func JavaProperties(extra map[string]string) Properties {
	p := Properties{
		"file.separator": "/", "path.separator": ":", "line.separator": "\n",
		"java.io.tmpdir": "/tmp", "os.name": "Linux",
	}
	if u, err := user.Current(); err == nil {
		p["user.name"], p["user.home"] = u.Username, u.HomeDir
	}
	if home, err := os.UserHomeDir(); err == nil {
		p["user.home"] = home
	}
	if dir, err := os.Getwd(); err == nil {
		p["user.dir"] = dir
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// Expand replaces each ${name} of s with the property's value, as the
// JDK's PropertyExpander does: ${/} is the file separator, ${{...}} and a
// "${" without its '}' stay as written, and an unknown property is an
// error.
func (p Properties) Expand(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		if strings.HasPrefix(s, "${{") {
			end := strings.Index(s[3:], "}}")
			if end < 0 || 3+end+2 == len(s) {
				b.WriteString(s)
				return b.String(), nil
			}
			b.WriteString(s[:3+end+2])
			s = s[3+end+2:]
			continue
		}
		end := strings.IndexByte(s, '}')
		if end < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		name := s[2:end]
		v, ok := p[name]
		if name == "/" {
			v, ok = "/", true
		}
		if !ok {
			return "", fmt.Errorf("unable to expand property %s", name)
		}
		b.WriteString(v)
		s = s[end+1:]
	}
}

// ResolveJAASPath turns the value of java.security.auth.login.config into
// a file name as the JDK does: a leading '=' (override the other
// configurations) is dropped, ${...} is expanded, and a file: URL is
// accepted. Other URLs (http:, https:, ftp:, jar:) are refused; anything
// else is a file name.
func ResolveJAASPath(value string, props Properties) (string, error) {
	v, err := props.Expand(strings.TrimPrefix(value, "="))
	if err != nil {
		return "", fmt.Errorf("sasl: java.security.auth.login.config %q: %w", value, err)
	}
	u, err := url.Parse(v)
	if err != nil {
		return v, nil
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
	case "http", "https", "ftp", "jar":
		return "", fmt.Errorf("sasl: java.security.auth.login.config %q: only file names and file: URLs are read", value)
	default:
		// Not a URL protocol Java knows: Java takes it as a file name.
		return v, nil
	}
	if u.Opaque != "" {
		return url.PathUnescape(u.Opaque)
	}
	return u.Path, nil
}

// LoadJAAS reads and parses the JAAS file at path, expanding ${...} with
// JavaProperties(nil).
func LoadJAAS(path string) (JAAS, error) { return LoadJAASWith(path, JavaProperties(nil)) }

// LoadJAASWith reads and parses the JAAS file at path, expanding ${...} in
// option values with props. Errors name the file and the line.
func LoadJAASWith(path string, props Properties) (JAAS, error) {
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
	cfg, err := ParseJAASWith(string(data), props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseJAAS parses the text of a JAAS configuration file with
// JavaProperties(nil) for ${...}; see ParseJAASWith.
func ParseJAAS(text string) (JAAS, error) { return ParseJAASWith(text, JavaProperties(nil)) }

// ParseJAASWith parses the text of a JAAS configuration file:
//
//	Name { class flag name=value ...; ... };
//
// as the JDK reads it. Comments are // and /* */ (and a lone '/' starts a
// comment to the end of the line). Names, classes, flags, keys and values
// are words (letters, digits, and . - _ $ *, not starting with a digit, '.'
// or '-') or double-quoted strings (Java escapes; a string ends at the end
// of its line). An unquoted number is an error. The flag is required,
// requisite, sufficient or optional (any case). ${property} in a value is
// expanded with props; a value that expands to nothing is an error. A
// section name given twice is an error.
func ParseJAASWith(text string, props Properties) (JAAS, error) {
	p := &jaasParser{lex: jaasLexer{s: text, line: 1}, props: props}
	p.advance()
	cfg := JAAS{}
	for p.tok.kind != tokEOF {
		line := p.tok.line
		name, modules, err := p.section()
		if err != nil {
			return nil, err
		}
		if _, dup := cfg[name]; dup {
			return nil, fmt.Errorf("%w: line %d: section %s is given twice", ErrJAASSyntax, line, name)
		}
		cfg[name] = modules
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

// jaasParser is ConfigFile's recursive descent over the lexer's tokens,
// with one token of look-ahead in tok.
type jaasParser struct {
	lex   jaasLexer
	props Properties
	tok   jaasToken
}

// advance reads the next token into tok.
func (p *jaasParser) advance() { p.tok = p.lex.next() }

// isPunct reports whether the look-ahead is the punctuation c.
func (p *jaasParser) isPunct(c rune) bool { return p.tok.kind == tokPunct && p.tok.punct == c }

// expect consumes the punctuation c.
func (p *jaasParser) expect(c rune) error {
	if !p.isPunct(c) {
		return p.unexpected(fmt.Sprintf("%q", c))
	}
	p.advance()
	return nil
}

// text consumes a word or a quoted string.
func (p *jaasParser) text(what string) (string, error) {
	if p.tok.kind != tokWord && p.tok.kind != tokQuoted {
		return "", p.unexpected(what)
	}
	s := p.tok.text
	p.advance()
	return s, nil
}

// unexpected is the error for a look-ahead that is not what.
func (p *jaasParser) unexpected(what string) error {
	if p.tok.kind == tokEOF {
		return fmt.Errorf("%w: expected %s, found the end of the file", ErrJAASSyntax, what)
	}
	return fmt.Errorf("%w: line %d: expected %s, found %s", ErrJAASSyntax, p.tok.line, what, p.tok)
}

// section parses Name { modules } ;
func (p *jaasParser) section() (string, []LoginModule, error) {
	name, err := p.text("a section name")
	if err != nil {
		return "", nil, err
	}
	if err := p.expect('{'); err != nil {
		return "", nil, err
	}
	var modules []LoginModule
	for !p.isPunct('}') {
		m, err := p.module()
		if err != nil {
			return "", nil, err
		}
		modules = append(modules, m)
	}
	p.advance()
	if err := p.expect(';'); err != nil {
		return "", nil, err
	}
	return name, modules, nil
}

// module parses class flag name=value ... ;
func (p *jaasParser) module() (LoginModule, error) {
	class, err := p.text("a login module class")
	if err != nil {
		return LoginModule{}, err
	}
	line := p.tok.line
	flag, err := p.text("a control flag")
	if err != nil {
		return LoginModule{}, err
	}
	switch strings.ToLower(flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return LoginModule{}, fmt.Errorf("%w: line %d: invalid control flag %q", ErrJAASSyntax, line, flag)
	}
	m := LoginModule{Class: class, Flag: strings.ToLower(flag), Options: map[string]string{}}
	for !p.isPunct(';') {
		key, err := p.text("an option name or ';'")
		if err != nil {
			return m, err
		}
		if err := p.expect('='); err != nil {
			return m, err
		}
		line := p.tok.line
		raw, err := p.text("an option value")
		if err != nil {
			return m, err
		}
		v, err := p.props.Expand(raw)
		if err != nil {
			return m, fmt.Errorf("%w: line %d: option %s: %w", ErrJAASSyntax, line, key, err)
		}
		if raw != "" && v == "" {
			return m, fmt.Errorf("%w: line %d: option %s: %q expands to an empty value", ErrJAASSyntax, line, key, raw)
		}
		m.Options[key] = v
	}
	p.advance()
	return m, nil
}
