package sasl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// This file turns an authenticated SASL user into the id of the sasl ACL
// scheme as ZooKeeper 3.8 does: its SaslServerCallbackHandler takes the
// Kerberos short name of the authentication id (KerberosName, with the
// auth_to_local rules of zookeeper.security.auth_to_local), then appends
// "/host" and "@REALM" unless zookeeper.kerberos.removeHostFromPrincipal
// or removeRealmFromPrincipal say otherwise. The authorization id the
// client asked for is not used while the rules give a name.

// ErrNoRule means no auth_to_local rule gave a short name for a principal,
// or a rule's result is not a simple name (KerberosName's NoMatchingRule
// and BadFormatString).
var ErrNoRule = errors.New("sasl: no auth_to_local rule applies")

// ErrRuleSyntax means an auth_to_local rule list does not parse.
var ErrRuleSyntax = errors.New("sasl: bad auth_to_local rule")

// maxRuleComponents bounds a rule's component count, far above the two a
// Kerberos name can have here.
const maxRuleComponents = 1 << 16

// ruleSyntax is one auth_to_local rule at the start of the remaining text:
// DEFAULT, or RULE:[n:format](match)s/from/to/g with the parts after the
// format optional.
var ruleSyntax = regexp.MustCompile(`^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))`)

// NameRule is one auth_to_local rule.
type NameRule struct {
	isDefault  bool
	components int
	format     string
	match      *regexp.Regexp // whole-string match; nil: any
	from       *regexp.Regexp // nil: no substitution
	to         string
	global     bool
	text       string // the rule as written, for messages
}

// String is the rule as written.
func (r NameRule) String() string { return r.text }

// ParseAuthToLocal parses zookeeper.security.auth_to_local: rules one
// after another, separated by white space (usually newlines). "" means
// DEFAULT, ZooKeeper's default. The patterns are Go regular expressions
// (RE2); a Java-only construct (a back reference, a look-around) is an
// error.
func ParseAuthToLocal(text string) ([]NameRule, error) {
	rest := strings.TrimSpace(text)
	if rest == "" {
		rest = "DEFAULT"
	}
	var rules []NameRule
	for rest != "" {
		m := ruleSyntax.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("%w: %q", ErrRuleSyntax, rest)
		}
		r, err := newNameRule(m)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
		rest = rest[len(m[0]):]
	}
	return rules, nil
}

// newNameRule builds a rule from the submatches of ruleSyntax.
func newNameRule(m []string) (NameRule, error) {
	r := NameRule{text: strings.TrimSpace(m[0])}
	if m[2] != "" {
		r.isDefault = true
		return r, nil
	}
	n, err := strconv.Atoi(m[4])
	if err != nil || n > maxRuleComponents {
		return r, fmt.Errorf("%w: %s: component count %q is not a number", ErrRuleSyntax, r.text, m[4])
	}
	r.components, r.format, r.to, r.global = n, m[5], m[10], m[11] == "g"
	if m[6] != "" {
		if r.match, err = regexp.Compile(`\A(?:` + m[7] + `)\z`); err != nil {
			return r, fmt.Errorf("%w: %s: %w", ErrRuleSyntax, r.text, err)
		}
	}
	if m[8] != "" {
		if r.from, err = regexp.Compile(m[9]); err != nil {
			return r, fmt.Errorf("%w: %s: %w", ErrRuleSyntax, r.text, err)
		}
	}
	return r, nil
}

// apply runs the rule on params (the realm, then the name's components).
// ok is false when the rule does not apply.
func (r NameRule) apply(params []string, defaultRealm string) (string, bool, error) {
	var result string
	switch {
	case r.isDefault:
		if params[0] != defaultRealm {
			return "", false, nil
		}
		result = params[1]
	case len(params)-1 == r.components:
		base, err := r.expandFormat(params)
		if err != nil {
			return "", false, err
		}
		if r.match != nil && !r.match.MatchString(base) {
			return "", false, nil
		}
		result = base
		if r.from != nil {
			result = r.substitute(base)
		}
	default:
		return "", false, nil
	}
	if strings.ContainsAny(result, "/@") {
		return "", false, fmt.Errorf("%w: non-simple name %s after auth_to_local rule %s", ErrNoRule, result, r.text)
	}
	return result, true, nil
}

// expandFormat replaces $0 (the realm), $1, $2 (the components) in the
// rule's format; a '$' without a valid index is an error.
func (r NameRule) expandFormat(params []string) (string, error) {
	var b strings.Builder
	f := r.format
	for {
		i := strings.IndexByte(f, '$')
		if i < 0 {
			b.WriteString(f)
			return b.String(), nil
		}
		b.WriteString(f[:i])
		j := i + 1
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(f[i+1 : j])
		if err != nil || n >= len(params) {
			return "", fmt.Errorf("%w: bad parameter %q in the format of auth_to_local rule %s", ErrNoRule, f[i:j], r.text)
		}
		b.WriteString(params[n])
		f = f[j:]
	}
}

// substitute applies s/from/to/ (every match with g), with the
// replacement read as Java's Matcher reads it: $n is group n (as many
// digits as still name a group), ${name} a named group, and a backslash
// takes the next character literally.
func (r NameRule) substitute(base string) string {
	matches := r.from.FindAllStringSubmatchIndex(base, -1)
	if !r.global && len(matches) > 1 {
		matches = matches[:1]
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		b.WriteString(base[last:m[0]])
		r.javaReplacement(&b, base, m)
		last = m[1]
	}
	b.WriteString(base[last:])
	return b.String()
}

// javaReplacement writes the replacement for one match (submatch indexes
// m of base).
func (r NameRule) javaReplacement(b *strings.Builder, base string, m []int) {
	group := func(n int) {
		if m[2*n] >= 0 {
			b.WriteString(base[m[2*n]:m[2*n+1]])
		}
	}
	to := r.to
	for i := 0; i < len(to); i++ {
		switch c := to[i]; {
		case c == '\\' && i+1 < len(to):
			i++
			b.WriteByte(to[i])
		case c == '$' && i+2 < len(to) && to[i+1] == '{':
			end := strings.IndexByte(to[i+2:], '}')
			if end < 0 {
				b.WriteString(to[i:])
				return
			}
			if n := r.from.SubexpIndex(to[i+2 : i+2+end]); n > 0 {
				group(n)
			}
			i += 2 + end
		case c == '$' && i+1 < len(to) && to[i+1] >= '0' && to[i+1] <= '9':
			n := int(to[i+1] - '0')
			i++
			for i+1 < len(to) && to[i+1] >= '0' && to[i+1] <= '9' && n*10+int(to[i+1]-'0') <= r.from.NumSubexp() {
				n = n*10 + int(to[i+1]-'0')
				i++
			}
			if n <= r.from.NumSubexp() {
				group(n)
			}
		default:
			b.WriteByte(c)
		}
	}
}

// kerberosName is a principal split as KerberosName splits it:
// service[/host][@realm]; a name without '@' is a service name whole.
type kerberosName struct {
	service, host, realm string
	hasHost, hasRealm    bool
}

// splitPrincipal splits name; a name with '@' must have at most one '/'
// before it and none after it.
func splitPrincipal(name string) (kerberosName, error) {
	rest, realm, hasRealm := strings.Cut(name, "@")
	if !hasRealm {
		return kerberosName{service: name}, nil
	}
	if strings.ContainsAny(realm, "/@") || strings.Count(rest, "/") > 1 {
		return kerberosName{}, fmt.Errorf("%w: malformed Kerberos name %s", ErrNoRule, name)
	}
	service, host, hasHost := strings.Cut(rest, "/")
	return kerberosName{service: service, host: host, realm: realm, hasHost: hasHost, hasRealm: true}, nil
}

// NameRules turn an authenticated SASL user into the id of the sasl
// scheme, as ZooKeeper's SaslServerCallbackHandler does.
type NameRules struct {
	// RemoveHost and RemoveRealm are zookeeper.kerberos.removeHostFromPrincipal
	// and removeRealmFromPrincipal.
	RemoveHost  bool
	RemoveRealm bool
	// Rules are zookeeper.security.auth_to_local (nil: DEFAULT).
	Rules []NameRule
	// DefaultRealm is krb5.conf's default_realm ("" when there is none),
	// the realm DEFAULT maps.
	DefaultRealm string
}

// shortName is KerberosName.getShortName: a name without host and realm
// is kept; otherwise the first rule that applies gives it.
func (r NameRules) shortName(k kerberosName) (string, error) {
	if !k.hasHost && !k.hasRealm {
		return k.service, nil
	}
	params := []string{k.realm, k.service}
	if k.hasHost {
		params = append(params, k.host)
	}
	rules := r.Rules
	if rules == nil {
		rules = []NameRule{{isDefault: true, text: "DEFAULT"}}
	}
	for _, rule := range rules {
		name, ok, err := rule.apply(params, r.DefaultRealm)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %s", ErrNoRule, joinPrincipal(k.service, k))
}

// joinPrincipal appends k's host and realm to short.
func joinPrincipal(short string, k kerberosName) string {
	if k.hasHost {
		short += "/" + k.host
	}
	if k.hasRealm {
		short += "@" + k.realm
	}
	return short
}

// Identity returns the sasl id of a login whose authenticated user is
// authn and whose requested authorization id is authz ("" when the client
// sent none): the short name of authn, then "/host" and "@REALM" unless
// removed. When no rule gives a short name, ZooKeeper keeps the requested
// authorization id; Identity then returns authn when authz is "" or
// authn, and an error wrapping ErrNoRule in both cases (for the log). A
// client that asked for another id gets id "" and the error: ZooKeeper
// would grant that id, zkserverd refuses the login.
func (r NameRules) Identity(authn, authz string) (id string, err error) {
	k, err := splitPrincipal(authn)
	if err == nil {
		var short string
		if short, err = r.shortName(k); err == nil {
			if r.RemoveHost {
				k.hasHost = false
			}
			if r.RemoveRealm {
				k.hasRealm = false
			}
			return joinPrincipal(short, k), nil
		}
	}
	if authz == "" || authz == authn {
		return authn, err
	}
	return "", fmt.Errorf("%w; %s may not act as %q", err, authn, authz)
}
