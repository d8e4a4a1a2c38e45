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
