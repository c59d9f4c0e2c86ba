package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// errAllowlist marks a malformed allowlist file.
var errAllowlist = errors.New("allowlist")

// allowance is one allowlist entry: on scenarios whose name matches
// scenario, a line only ZooKeeper printed may match any of zookeeper, and a
// line only zkserverd printed may match any of zkserverd.
type allowance struct {
	line      int // where the entry starts in the file
	scenario  *regexp.Regexp
	zookeeper []*regexp.Regexp
	zkserverd []*regexp.Regexp
	reason    string
}

// parseAllowlist reads blocks of "key value" lines separated by blank
// lines; # starts a comment line. Keys: scenario (a regexp, matched
// against the whole name), zookeeper and zkserverd (regexps for differing
// lines, repeatable, at least one of them), reason (required).
func parseAllowlist(r io.Reader) ([]allowance, error) {
	var (
		out  []allowance
		cur  *allowance
		errs []error
	)
	end := func() {
		if cur == nil {
			return
		}
		switch {
		case cur.scenario == nil:
			errs = append(errs, fmt.Errorf("%w: entry at line %d: no scenario", errAllowlist, cur.line))
		case cur.reason == "":
			errs = append(errs, fmt.Errorf("%w: entry at line %d: no reason", errAllowlist, cur.line))
		case len(cur.zookeeper)+len(cur.zkserverd) == 0:
			errs = append(errs, fmt.Errorf("%w: entry at line %d: no zookeeper or zkserverd pattern", errAllowlist, cur.line))
		default:
			out = append(out, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			end()
			continue
		}
		if strings.HasPrefix(text, "#") {
			continue
		}
		if cur == nil {
			cur = &allowance{line: n}
		}
		key, value, _ := strings.Cut(text, " ")
		value = strings.TrimSpace(value)
		if err := cur.set(key, value); err != nil {
			errs = append(errs, fmt.Errorf("%w: line %d: %w", errAllowlist, n, err))
		}
	}
	end()
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", errAllowlist, err))
	}
	return out, errors.Join(errs...)
}

func (a *allowance) set(key, value string) error {
	if key == "reason" {
		a.reason = value
		return nil
	}
	if key == "scenario" {
		value = "^(?:" + value + ")$"
	}
	re, err := regexp.Compile(value)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	switch key {
	case "scenario":
		a.scenario = re
	case "zookeeper":
		a.zookeeper = append(a.zookeeper, re)
	case "zkserverd":
		a.zkserverd = append(a.zkserverd, re)
	default:
		return fmt.Errorf("unknown key %q", key)
	}
	return nil
}

// checkReasons requires every reason to appear verbatim in doc (the text of
// docs/compatibility.md), so each allowed difference is documented.
func checkReasons(list []allowance, doc string) error {
	var errs []error
	for _, a := range list {
		if !strings.Contains(doc, a.reason) {
			errs = append(errs, fmt.Errorf("%w: entry at line %d: reason %q is not in docs/compatibility.md", errAllowlist, a.line, a.reason))
		}
	}
	return errors.Join(errs...)
}

// allowed reports whether every line of h is covered by an entry for the
// scenario, and returns the reasons used.
func allowed(list []allowance, scenario string, h hunk) (bool, []string) {
	var reasons []string
	cover := func(line string, side func(allowance) []*regexp.Regexp) bool {
		for _, a := range list {
			if !a.scenario.MatchString(scenario) {
				continue
			}
			for _, re := range side(a) {
				if re.MatchString(line) {
					reasons = appendNew(reasons, a.reason)
					return true
				}
			}
		}
		return false
	}
	for _, l := range h.left {
		if !cover(l, func(a allowance) []*regexp.Regexp { return a.zookeeper }) {
			return false, nil
		}
	}
	for _, l := range h.right {
		if !cover(l, func(a allowance) []*regexp.Regexp { return a.zkserverd }) {
			return false, nil
		}
	}
	return true, reasons
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
