// Package leak finds a sensitive value in text that carries it in any of
// the forms a value commonly travels in: as it is, in another case, URL-
// or percent-encoded, hex-encoded, inside base64 (standard or URL
// alphabet, at any alignment: "user:secret" in a Basic Authorization
// header carries the secret however long the user is), or as its SHA-256,
// SHA-1 or MD5 digest in hex. The runtime refuses requests that carry a
// secret to a host it may not go to; certification searches outputs,
// errors, logs and requests for its canaries.
package leak

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
)

// MinLength is the shortest value Find looks for: shorter ones appear in
// ordinary text by chance.
const MinLength = 8

// Value is a sensitive value and the forms Find looks for, worked out
// once.
type Value struct {
	value string
	forms []form
}

type form struct {
	text string
	name string
	fold bool // compared without case
}

// NewValue prepares v for Find.
func NewValue(v string) Value {
	out := Value{value: v}
	if len(v) < MinLength {
		return out
	}
	add := func(name, text string, fold bool) {
		if text != "" {
			out.forms = append(out.forms, form{text, name, fold})
		}
	}
	add("as it is", v, true)
	if q := url.QueryEscape(v); q != v {
		add("URL-encoded", q, true)
	}
	if p := url.PathEscape(v); p != v && p != url.QueryEscape(v) {
		add("URL-encoded", p, true)
	}
	add("hex-encoded", hex.EncodeToString([]byte(v)), true)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for _, core := range base64Cores(enc, v) {
			add("base64-encoded", core, false)
		}
	}
	s256, s1, m5 := sha256.Sum256([]byte(v)), sha1.Sum([]byte(v)), md5.Sum([]byte(v))
	add("as its SHA-256", hex.EncodeToString(s256[:]), true)
	add("as its SHA-1", hex.EncodeToString(s1[:]), true)
	add("as its MD5", hex.EncodeToString(m5[:]), true)
	return out
}

// base64Cores are the substrings that any base64 text carrying v has,
// whatever v's offset in the encoded bytes: for each of the three
// alignments, v's encoding without the characters its neighbours share.
func base64Cores(enc *base64.Encoding, v string) []string {
	var cores []string
	for k := range 3 {
		e := enc.EncodeToString(append(make([]byte, k), v...))
		start := (k*8 + 5) / 6 // characters that carry bits of the k bytes before
		end := len(e) - 4      // the last group may hold bits of what follows
		if rest := (k + len(v)) % 3; rest == 0 {
			end = len(e)
		}
		if end-start >= MinLength {
			cores = append(cores, e[start:end])
		}
	}
	return cores
}

// Find reports in which form text carries v ("" when it does not).
func (v Value) Find(text string) string {
	var lower string
	for _, f := range v.forms {
		if !f.fold {
			if strings.Contains(text, f.text) {
				return f.name
			}
			continue
		}
		if lower == "" {
			lower = strings.ToLower(text)
		}
		if strings.Contains(lower, strings.ToLower(f.text)) {
			return f.name
		}
	}
	return ""
}

// WithParts returns v that also finds any n consecutive characters of the
// value (as they are, in any case): for values whose every character is
// drawn at random, where a part is as telling as the whole. Values not
// longer than n gain nothing.
func (v Value) WithParts(n int) Value {
	if n < MinLength || len(v.value) <= n {
		return v
	}
	out := Value{value: v.value, forms: append([]form(nil), v.forms...)}
	for i := 0; i+n <= len(v.value); i++ {
		out.forms = append(out.forms, form{v.value[i : i+n], "in part", true})
	}
	return out
}

// longest is the length of v's longest form.
func (v Value) longest() int {
	n := 0
	for _, f := range v.forms {
		n = max(n, len(f.text))
	}
	return n
}

// Stream finds values in text written to it in pieces, wherever the
// pieces are cut, keeping only the few bytes a form cut in two needs: a
// stream of any length is searched in constant memory. It is not safe
// for concurrent use.
type Stream struct {
	values []Value
	found  []string
	tail   []byte
	keep   int
}

// NewStream returns a stream that looks for values.
func NewStream(values ...Value) *Stream {
	s := &Stream{values: values, found: make([]string, len(values))}
	for _, v := range values {
		s.keep = max(s.keep, v.longest()-1)
	}
	return s
}

// Write searches p, after what came before it, and never fails.
func (s *Stream) Write(p []byte) (int, error) {
	text := append(s.tail, p...)
	for i, v := range s.values {
		if s.found[i] == "" {
			s.found[i] = v.Find(string(text))
		}
	}
	if len(text) > s.keep {
		text = text[len(text)-s.keep:]
	}
	s.tail = append(s.tail[:0:0], text...)
	return len(p), nil
}

// Found returns, per value given to NewStream, the form it was first
// found in ("" for values not seen).
func (s *Stream) Found() []string { return s.found }
