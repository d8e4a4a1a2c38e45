package testutil

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	if d := Diff("a", []byte("x\ny\n"), "b", []byte("x\ny\n")); d != "" {
		t.Fatalf("equal inputs give a diff: %q", d)
	}
	d := Diff("golden.go", []byte("one\ntwo\nthree\n"), "generated", []byte("one\n2\nthree\n"))
	for _, want := range []string{"--- golden.go", "+++ generated", "-two", "+2", " one", " three"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}
