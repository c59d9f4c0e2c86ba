package conf

import (
	"fmt"
	"strconv"
	"strings"
)

// property is one key=value pair of a properties file.
type property struct {
	key, value string
}

// readProperties splits text the way java.util.Properties.load does:
// natural lines end in \n, \r\n or \r; leading whitespace is skipped;
// blank lines and lines starting with # or ! are comments; a line ending
// in an odd number of backslashes continues on the next one; the key ends
// at the first unescaped '=', ':' or whitespace; backslash escapes (\t \n
// \r \f \uXXXX, and \x for any other x) are decoded. Keys and values are
// then trimmed, as ZooKeeper does. Later duplicates replace earlier ones,
// keeping the first one's position.
func readProperties(text string) ([]property, error) {
	var props []property
	index := make(map[string]int)
	lines := naturalLines(text)
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for oddTrailingBackslashes(line) {
			line = line[:len(line)-1]
			if i+1 >= len(lines) {
				break
			}
			i++
			line += strings.TrimLeft(lines[i], " \t\f")
		}
		p, err := splitProperty(line)
		if err != nil {
			return nil, err
		}
		if j, dup := index[p.key]; dup {
			props[j].value = p.value
			continue
		}
		index[p.key] = len(props)
		props = append(props, p)
	}
	return props, nil
}

// naturalLines splits text on \n, \r\n and \r.
func naturalLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// oddTrailingBackslashes reports whether line ends in an odd number of
// backslashes (a continuation).
func oddTrailingBackslashes(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into its key and value.
func splitProperty(line string) (property, error) {
	keyEnd, valueStart := len(line), len(line)
	hasSep, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if !escaped && (c == ' ' || c == '\t' || c == '\f') {
			keyEnd, valueStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if c != ' ' && c != '\t' && c != '\f' {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	key, err := unescape(line[:keyEnd])
	if err != nil {
		return property{}, err
	}
	value, err := unescape(line[valueStart:])
	if err != nil {
		return property{}, fmt.Errorf("conf: %s: %w", key, err)
	}
	return property{key: javaTrim(key), value: javaTrim(value)}, nil
}

// unescape decodes properties-file backslash escapes.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("%w: malformed \\uxxxx encoding in %q", ErrInvalid, s)
			}
			v, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("%w: malformed \\uxxxx encoding in %q", ErrInvalid, s)
			}
			b.WriteRune(rune(v))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// javaTrim removes leading and trailing characters <= ' ', like Java's
// String.trim.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
