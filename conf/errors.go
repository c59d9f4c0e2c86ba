package conf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid matches (errors.Is) every error Parse, Load and Validate
// report about the content of a configuration.
var ErrInvalid = errors.New("conf: invalid configuration")

// KeyError reports a bad value for one configuration key.
type KeyError struct {
	// Source is where the key was set: the configuration file's path, or
	// the flag that overrode it (e.g. "--client-port"); "" when unknown
	// (Parse of a reader). Load and WithSource fill it in.
	Source string
	Key    string // the key as ZooKeeper spells it, e.g. "tickTime" or "server.3"
	Value  string // the offending value
	Reason string // what is wrong, e.g. "is not an integer"
	// Missing means the key is absent: Value is unused and Reason says
	// what is wrong, e.g. "is not set".
	Missing bool
}

// Error returns e.g. `conf: /etc/zoo.cfg: tickTime: "abc" is not an
// integer`, or `conf: /etc/zoo.cfg: dataDir is not set` for a missing key.
func (e *KeyError) Error() string {
	var b strings.Builder
	b.WriteString("conf: ")
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	b.WriteString(e.Key)
	if e.Missing {
		b.WriteString(" ")
		b.WriteString(e.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, ": %q %s", e.Value, e.Reason)
	return b.String()
}

// Is reports whether target is ErrInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// keyErr builds a *KeyError.
func keyErr(key, value, reason string, args ...any) error {
	return &KeyError{Key: key, Value: value, Reason: fmt.Sprintf(reason, args...)}
}

// WithSource names source (a file path or a flag) in every *KeyError of
// err (err itself, or one of the errors errors.Join joined) that names no
// source yet and whose key is one of keys, or any key when keys is empty,
// and returns err. An *EnvError already names its variable and is left
// alone. With no keys given, an err with no such error is wrapped so that
// its text names source after the "conf: " prefix. A nil err stays nil.
func WithSource(err error, source string, keys ...string) error {
	if err == nil {
		return nil
	}
	found := false
	var visit func(error)
	visit = func(e error) {
		switch x := e.(type) {
		case *KeyError:
			found = true
			if x.Source == "" && (len(keys) == 0 || slices.Contains(keys, x.Key)) {
				x.Source = source
			}
		case *EnvError, *sourceError:
			found = true
		case interface{ Unwrap() []error }:
			for _, inner := range x.Unwrap() {
				visit(inner)
			}
		case interface{ Unwrap() error }:
			// Not descended: a wrapper such as fmt.Errorf's keeps the text
			// it was made with. It counts as named when it wraps an error
			// that names its source.
			var ke *KeyError
			var ee *EnvError
			var se *sourceError
			found = found || (errors.As(e, &ke) && ke.Source != "") || errors.As(e, &ee) || errors.As(e, &se)
		}
	}
	visit(err)
	if !found && len(keys) == 0 {
		return &sourceError{source: source, err: err}
	}
	return err
}

// sourceError names the source of an error that is not about one key (a
// line that does not parse, an unreadable myid file).
type sourceError struct {
	source string
	err    error
}

// Error returns "conf: <source>: " and err's text without its own "conf: ".
func (e *sourceError) Error() string {
	return "conf: " + e.source + ": " + strings.TrimPrefix(e.err.Error(), "conf: ")
}

// Unwrap returns the error.
func (e *sourceError) Unwrap() error { return e.err }
