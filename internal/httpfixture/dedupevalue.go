package httpfixture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// A provider reads a request with its own parser, which the connector
// does not choose; where parsers differ, a request read one way here and
// another way there would let certification count one effect per key
// while the provider counts several. So the dedupe value is read only
// from requests every parser reads alike, and is taken as it is: a
// request that names its dedupe value ambiguously (two header lines, a
// header name or a body field name that matches only by a looser rule,
// a body not declared JSON or holding more than one value, a path that
// normalises to another, a method override) or whose value is not plain
// (beyond 255 characters, or holding anything but visible ASCII other
// than a comma) carries none, and each of its copies is a new effect.

// maxValueLength is the longest dedupe value taken: providers cut or
// refuse longer ones (Stripe's keys go up to 255 characters).
const maxValueLength = 255

// maxDepth bounds how deep a JSON body is read for its dedupe field.
const maxDepth = 64

// read is what a write tells the endpoint: the value it is deduplicated
// on, or why it carries none although it names one; applies is false
// when the write is not to this endpoint at all.
func (d Dedupe) read(method, rawURL string, header http.Header, body []byte) (value, why string, applies bool) {
	if d.Method != "*" && !strings.EqualFold(d.Method, method) {
		return "", "", false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", false
	}
	if !normalPath(u) {
		if d.matchesPath(u.Path) || d.matchesPath(path.Clean("/"+u.Path)) {
			return "", fmt.Sprintf("its path %s is not in normal form (dot or empty segments, escapes), which providers resolve differently", u.EscapedPath()), true
		}
		return "", "", false
	}
	if !d.matchesPath(u.Path) {
		return "", "", false
	}
	if m := overrideMethod(header); m != "" && !strings.EqualFold(m, method) {
		return "", fmt.Sprintf("it asks, in a method override header, to be a %s, which a provider that honours it takes elsewhere", m), true
	}
	var raw string
	if d.Header != "" {
		raw, why = soleHeader(header, d.Header)
		raw = strings.TrimSpace(raw) // as the client sends it
	} else {
		raw, why = soleBodyField(header, body, d.BodyField)
	}
	if why != "" || raw == "" {
		return "", why, true
	}
	if why := plainValue(raw); why != "" {
		return "", fmt.Sprintf("its %s %s", d.on(), why), true
	}
	return raw, "", true
}

// on names what the endpoint deduplicates on.
func (d Dedupe) on() string {
	if d.Header != "" {
		return d.Header + " header"
	}
	return d.BodyField + " body field"
}

// matchesPath reports whether p is the endpoint's path.
func (d Dedupe) matchesPath(p string) bool {
	if prefix, ok := strings.CutSuffix(d.Path, "*"); ok {
		return strings.HasPrefix(p, prefix)
	}
	return p == d.Path
}

// normalPath reports whether u's path reads the same to every server: no
// escapes, no empty, "." or ".." segments.
func normalPath(u *url.URL) bool {
	if u.RawPath != "" || strings.Contains(u.EscapedPath(), "%") {
		return false
	}
	for i, seg := range strings.Split(u.Path, "/") {
		switch {
		case i == 0 && seg == "":
		case seg == "." || seg == "..":
			return false
		case seg == "" && i != strings.Count(u.Path, "/"):
			return false // an empty segment before the last
		}
	}
	return true
}

// plainValue says why a dedupe value is not read alike by every
// provider, "" when it is.
func plainValue(v string) string {
	if len(v) > maxValueLength {
		return fmt.Sprintf("is %d characters long, and providers cut or refuse values beyond %d", len(v), maxValueLength)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e || c == ',' {
			return fmt.Sprintf("holds %q, and providers read values with spaces, commas (a list) or characters beyond visible ASCII differently", c)
		}
	}
	return ""
}

// headerValues are the values of every header whose name matches name
// in any case, and whether each such name matches in ASCII case only
// (a name such as "Idempotency-\u212Aey" matches by Unicode folding
// alone, and providers differ on it).
func headerValues(header http.Header, name string) (values []string, ascii bool) {
	ascii = true
	for k, vs := range header {
		if strings.EqualFold(k, name) {
			values = append(values, vs...)
			ascii = ascii && asciiEqualFold(k, name)
		}
	}
	return values, ascii
}

// asciiEqualFold reports whether a and b are equal when ASCII letters
// are folded, and nothing else is.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// soleHeader is the value of the one field line of header named name,
// and why there is none although the request names one (several lines:
// a provider may take the first, the last or all joined).
func soleHeader(header http.Header, name string) (string, string) {
	values, ascii := headerValues(header, name)
	switch {
	case len(values) == 0:
		return "", ""
	case !ascii:
		return "", fmt.Sprintf("it names its %s header with letters beyond ASCII, which providers match differently", name)
	case len(values) > 1:
		return "", fmt.Sprintf("it sends its %s header on %d lines, which providers read differently (the first, the last, or all joined)", name, len(values))
	}
	return values[0], ""
}

// fieldReading is how a body names its dedupe field.
type fieldReading int

const (
	fieldOnce      fieldReading = iota // once, as the contract spells it
	fieldAbsent                        // not at all, or not as a string, or too deep
	fieldTwice                         // more than once in one object of the path
	fieldOtherCase                     // once, spelled otherwise (case, dotless i)
)

// soleBodyField is the string at the dotted path field of a JSON body,
// and why there is none although the body names one.
func soleBodyField(header http.Header, body []byte, field string) (string, string) {
	if field == "" {
		return "", ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	v, reading := pathValue(dec, strings.Split(field, "."), 0)
	switch reading {
	case fieldTwice:
		return "", fmt.Sprintf("its body names the %s field more than once (alike, in another case or with escapes), which providers' parsers read differently", field)
	case fieldOtherCase:
		return "", fmt.Sprintf("its body spells the %s field otherwise (in another case), which providers' parsers read differently", field)
	case fieldAbsent:
		return "", ""
	}
	s, ok := v.(string)
	if !ok {
		return "", ""
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "its body holds more than one JSON value, which providers' parsers read differently"
	}
	if !jsonContent(header) {
		return "", "its body is not declared JSON (Content-Type), so providers do not read it as JSON"
	}
	return s, ""
}

// jsonContent reports whether the request declares a JSON body.
func jsonContent(header http.Header) bool {
	values, ascii := headerValues(header, "Content-Type")
	if len(values) != 1 || !ascii {
		return false
	}
	mt, _, err := mime.ParseMediaType(values[0])
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// alikeName reports whether a body's name may be taken for seg by some
// parser: equal in any case, or once a dotless or dotted i is folded as
// Turkish locales fold it.
func alikeName(name, seg string) bool {
	return strings.EqualFold(name, seg) || strings.EqualFold(dotlessI.Replace(name), dotlessI.Replace(seg))
}

var dotlessI = strings.NewReplacer("ı", "i", "İ", "i")

// pathValue reads one JSON value from dec and returns what path leads to
// in it and how the path's names were found. Only the path's objects are
// kept; the rest is skipped.
func pathValue(dec *json.Decoder, path []string, depth int) (any, fieldReading) {
	if depth > maxDepth {
		return nil, fieldAbsent
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fieldAbsent
	}
	delim, isDelim := tok.(json.Delim)
	if !isDelim {
		if len(path) > 0 {
			return nil, fieldAbsent
		}
		return tok, fieldOnce
	}
	switch delim {
	case '[':
		for dec.More() {
			if _, r := pathValue(dec, nil, depth+1); r != fieldOnce {
				return nil, fieldAbsent
			}
		}
		if _, err := dec.Token(); err != nil || len(path) > 0 {
			return nil, fieldAbsent
		}
		return nil, fieldOnce
	case '{':
		var found any
		reading, matches := fieldAbsent, 0
		for dec.More() {
			tok, err := dec.Token()
			name, isName := tok.(string)
			if err != nil || !isName {
				return nil, fieldAbsent
			}
			if len(path) > 0 && alikeName(name, path[0]) {
				matches++
				found, reading = pathValue(dec, path[1:], depth+1)
				if reading == fieldOnce && name != path[0] {
					reading = fieldOtherCase
				}
				continue
			}
			if _, r := pathValue(dec, nil, depth+1); r != fieldOnce {
				return nil, fieldAbsent
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, fieldAbsent
		}
		switch {
		case len(path) == 0:
			return nil, fieldOnce
		case matches > 1:
			return nil, fieldTwice
		case reading != fieldOnce:
			return nil, reading
		}
		return found, fieldOnce
	}
	return nil, fieldAbsent
}

// overrideMethod is the method a method override header asks for, ""
// when there is none.
func overrideMethod(header http.Header) string {
	for _, name := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"} {
		values, _ := headerValues(header, name)
		for _, v := range values {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}
