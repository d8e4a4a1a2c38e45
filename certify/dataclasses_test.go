package certify

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
)

// TestNearTellsKeptFormsFromDigests: a one-character change of a value
// changes a form that keeps it (itself, reversed, shifted) by a character
// and a digest of it wholly; near tells the first from the second.
func TestNearTellsKeptFormsFromDigests(t *testing.T) {
	v := "adalovelace@corp.example"
	w := oneOff(v)
	if w == v || len(w) != len(v) || !strings.HasSuffix(w, "@corp.example") {
		t.Fatalf("oneOff(%q) = %q", v, w)
	}
	reverse := func(s string) string {
		b := []byte(s)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		return string(b)
	}
	digest := func(s string) string { sum := md5.Sum([]byte("invoice for " + s)); return hex.EncodeToString(sum[:]) }
	for _, c := range []struct {
		name string
		f    func(string) string
		want bool
	}{
		{"itself", func(s string) string { return s }, true},
		{"reversed", reverse, true},
		{"upper-cased in a sentence", func(s string) string { return "Contact " + strings.ToUpper(s) + " today" }, true},
		{"a digest of a document holding it", digest, false},
		{"unrelated to it", func(string) string { return "ok" }, false},
	} {
		if got := near(c.f(v), c.f(w)); got != c.want {
			t.Errorf("%s: near = %v, want %v", c.name, got, c.want)
		}
	}
	if !linesNear("a\nb", "a\nb\nc") || linesNear("a\n"+digest(v), "a\n"+digest(w)) || !linesNear("x "+v, "x "+w) {
		t.Error("linesNear")
	}
	twice := func(s string) string { r := reverse(s); return r + "." + r }
	if !near(twice(v), twice(w)) {
		t.Error("a value kept twice is not near")
	}
	if near("#e57373", "#64b5f6") {
		t.Error("a colour code drawn from a hash is near")
	}
	for _, c := range []struct{ in, keep string }{
		{"https://hooks.zapier.com/hooks/catch/123/abc/", "https://hooks.zapier.com/"},
		{"sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_"},
	} {
		if got := oneOff(c.in); got == c.in || !strings.HasPrefix(got, c.keep) {
			t.Errorf("oneOff(%q) = %q", c.in, got)
		}
	}
	if got := oneOff("0123456789abcdef0123456789abcdef"); strings.Trim(got, "0123456789abcdef") != "" || got == "0123456789abcdef0123456789abcdef" {
		t.Errorf("oneOff of hex = %q", got)
	}
	if got := oneOff("4242424242424242"); !luhnValid(got) || got == "4242424242424242" {
		t.Errorf("oneOff of a card number = %q", got)
	}
	if got := oneOff("4242"); got != "4252" {
		t.Errorf("oneOff(4242) = %q", got)
	}
	mac := func(s string) string {
		sum := md5.Sum([]byte("key:" + s + ":body"))
		return "sig=" + hex.EncodeToString(sum[:])
	}
	if near(mac(v), mac(w)) {
		t.Error("a signature made with the value is near")
	}
}
