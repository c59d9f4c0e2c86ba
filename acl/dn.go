package acl

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// This file converts distinguished names between certificates and the text
// x509 ids are made of, as Java's X500Principal does.

// attributeTypeAndValue is one AVA of a certificate's subject, raw value kept.
type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rdnSET is one relative distinguished name (the "SET" suffix makes
// encoding/asn1 read a SET OF).
type rdnSET []attributeTypeAndValue

// errBadSubject means a certificate's subject is not a DER RDNSequence.
var errBadSubject = errors.New("acl: malformed certificate subject")

// SubjectDN prints a certificate's subject the way Java's
// X500Principal.getName() does: RDNs last-to-first separated by ',', the AVAs
// of one RDN in encoded order separated by '+', the keywords CN, C, L, ST, O,
// OU, STREET, DC and UID (any other type as its dotted OID), string values
// with ,=+<>#;"\ escaped by '\', NUL as "\00", leading and trailing spaces
// escaped, and non-string values (or values of OID-named types) as '#' and
// the lowercase hex of their DER encoding.
func SubjectDN(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", fmt.Errorf("%w: no certificate", errBadSubject)
	}
	var seq []rdnSET
	rest, err := asn1.Unmarshal(cert.RawSubject, &seq)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errBadSubject, err)
	}
	if len(rest) != 0 {
		return "", fmt.Errorf("%w: trailing data", errBadSubject)
	}
	rdns := make([]string, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- {
		avas := make([]string, 0, len(seq[i]))
		for _, ava := range seq[i] {
			avas = append(avas, formatAVA(ava))
		}
		rdns = append(rdns, strings.Join(avas, "+"))
	}
	return strings.Join(rdns, ","), nil
}

// rfc2253Keywords are the attribute types Java prints by name in RFC 2253.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// formatAVA prints one type=value pair.
func formatAVA(ava attributeTypeAndValue) string {
	oid := ava.Type.String()
	keyword, named := rfc2253Keywords[oid]
	if !named {
		return oid + "=#" + hex.EncodeToString(ava.Value.FullBytes)
	}
	if !isJavaDirectoryString(ava.Value) {
		return keyword + "=#" + hex.EncodeToString(ava.Value.FullBytes)
	}
	return keyword + "=" + escapeDNValue(javaDecodeUTF8(ava.Value.Bytes))
}

// isJavaDirectoryString reports whether Java prints a value as text: the
// universal string types PrintableString, T61String, IA5String,
// GeneralString, BMPString and UTF8String. Java decodes all of their bytes as
// UTF-8, so a BMPString prints garbled; that is copied.
func isJavaDirectoryString(v asn1.RawValue) bool {
	if v.Class != asn1.ClassUniversal || v.IsCompound {
		return false
	}
	switch v.Tag {
	case asn1.TagPrintableString, asn1.TagT61String, asn1.TagIA5String,
		asn1.TagGeneralString, asn1.TagBMPString, asn1.TagUTF8String:
		return true
	}
	return false
}

// dnEscapees are the characters Java prefixes with '\' in RFC 2253 output.
const dnEscapees = `,=+<>#;"\`

// escapeDNValue escapes a string value as Java's RFC 2253 output does.
func escapeDNValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == 0:
			b.WriteString(`\00`)
		case strings.ContainsRune(dnEscapees, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return escapeEdgeSpaces(b.String())
}

// escapeEdgeSpaces prefixes '\' to the leading and trailing run of spaces
// and carriage returns (an all-space value is escaped throughout).
func escapeEdgeSpaces(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\r' }
	lead := 0
	for lead < len(s) && isSpace(s[lead]) {
		lead++
	}
	trail := len(s)
	for trail > lead && isSpace(s[trail-1]) {
		trail--
	}
	if lead == 0 && trail == len(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dnKeywords are the attribute names Java's X500Principal(String) accepts.
var dnKeywords = map[string]bool{
	"CN": true, "C": true, "L": true, "S": true, "ST": true, "O": true, "OU": true,
	"T": true, "IP": true, "STREET": true, "DC": true, "DNQUALIFIER": true, "DNQ": true,
	"SURNAME": true, "GIVENNAME": true, "INITIALS": true, "GENERATION": true,
	"EMAIL": true, "EMAILADDRESS": true, "UID": true, "SERIALNUMBER": true,
}

// ValidDN reports whether s parses as a distinguished name the way Java's
// new X500Principal(s) parses it (RFC 1779/2253/4514 syntax): "" or RDNs
// separated by ',' or ';', AVAs within an RDN separated by '+', each
// "type=value" where type is a known keyword (any case, surrounding spaces
// ignored) or a dotted OID (optionally "OID."-prefixed), and value is empty,
// a quoted string, '#' and the hex of one DER value, or text in which
// <, > and " are escaped. Escapes are '\' and one of ,=+<>#;"\ space
// newline, or '\' and two hex digits. Splitting at separators follows
// quotes by parity, which differs from Java only for malformed names.
func ValidDN(s string) bool {
	if s == "" {
		return true
	}
	for _, rdn := range splitDN(s, ",;") {
		for _, ava := range splitDN(rdn, "+") {
			if !validAVA(ava) {
				return false
			}
		}
	}
	return true
}

// splitDN splits s at the separator bytes in seps that are neither escaped
// by '\' nor inside double quotes.
func splitDN(s, seps string) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && strings.IndexByte(seps, c) >= 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// validAVA checks one "type=value".
func validAVA(ava string) bool {
	keyword, value, ok := strings.Cut(ava, "=")
	if !ok || !validDNKeyword(strings.TrimSpace(keyword)) {
		return false
	}
	value = strings.TrimLeft(value, " \n")
	switch {
	case value == "":
		return true
	case value[0] == '#':
		return validHexValue(value[1:])
	case value[0] == '"':
		return validQuotedValue(value[1:])
	}
	return validPlainValue(value)
}

// validDNKeyword accepts known keywords and dotted OIDs.
func validDNKeyword(k string) bool {
	u := strings.ToUpper(k)
	if dnKeywords[u] {
		return true
	}
	return validOID(strings.TrimPrefix(u, "OID."))
}

// validOID accepts an object identifier in dotted decimal form: at least two
// arcs, the first 0, 1 or 2, and the second below 40 unless the first is 2.
func validOID(s string) bool {
	arcs := strings.Split(s, ".")
	if len(arcs) < 2 {
		return false
	}
	for _, a := range arcs {
		if a == "" || strings.Trim(a, "0123456789") != "" {
			return false
		}
	}
	first := strings.TrimLeft(arcs[0], "0")
	second := strings.TrimLeft(arcs[1], "0")
	if len(first) > 1 || (first != "" && first[0] > '2') {
		return false
	}
	return first == "2" || len(second) < 2 || (len(second) == 2 && second < "40")
}

// validHexValue accepts the hex digits of exactly one DER value.
func validHexValue(s string) bool {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return false
	}
	var v asn1.RawValue
	rest, err := asn1.Unmarshal(b, &v)
	return err == nil && len(rest) == 0
}

// dnEscapable are the characters that may follow '\' in a DN value.
const dnEscapable = ",=\n+<>#;\\\" "

// validQuotedValue accepts the rest of a quoted value after its opening
// quote: escapes, the closing quote, then only spaces and newlines.
func validQuotedValue(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			n, ok := escapeLen(s[i+1:], dnEscapable[:len(dnEscapable)-1])
			if !ok {
				return false
			}
			i += n
		case '"':
			return strings.Trim(s[i+1:], " \n") == ""
		}
	}
	return false
}

// validPlainValue accepts an unquoted value.
func validPlainValue(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>', '"', ',', '+', ';':
			return false
		case '\\':
			n, ok := escapeLen(s[i+1:], dnEscapable)
			if !ok {
				return false
			}
			i += n
		}
	}
	return true
}

// escapeLen is the length of what follows a '\': two hex digits, or one
// character of allowed.
func escapeLen(s, allowed string) (int, bool) {
	switch {
	case len(s) >= 1 && isHexDigit(s[0]):
		return 2, len(s) >= 2 && isHexDigit(s[1])
	case len(s) >= 1 && strings.IndexByte(allowed, s[0]) >= 0:
		return 1, true
	}
	return 0, false
}

// isHexDigit reports whether c is an ASCII hex digit.
func isHexDigit(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
