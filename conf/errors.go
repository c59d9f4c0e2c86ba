package conf

import (
	"errors"
	"fmt"
)

// ErrInvalid matches (errors.Is) every error Parse, Load and Validate
// report about the content of a configuration.
var ErrInvalid = errors.New("conf: invalid configuration")

// KeyError reports a bad value for one configuration key.
type KeyError struct {
	Key    string // the key as ZooKeeper spells it, e.g. "tickTime" or "server.3"
	Value  string // the offending value
	Reason string // what is wrong, e.g. "is not an integer"
}

// Error returns e.g. `conf: tickTime: "abc" is not an integer`.
func (e *KeyError) Error() string {
	return fmt.Sprintf("conf: %s: %q %s", e.Key, e.Value, e.Reason)
}

// Is reports whether target is ErrInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// keyErr builds a *KeyError.
func keyErr(key, value, reason string, args ...any) error {
	return &KeyError{Key: key, Value: value, Reason: fmt.Sprintf(reason, args...)}
}
