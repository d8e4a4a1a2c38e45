package connectorvet

import (
	"go/parser"
	"go/token"
	"testing"
)

// TestBuiltWithCgo: a file that imports "C" counts as C code a consumer
// compiles when some platform's build with cgo on compiles it, and not
// when only a tag of its own (x/text's icu) would.
func TestBuiltWithCgo(t *testing.T) {
	for src, want := range map[string]bool{
		"package p\nimport \"C\"\n":                                      true,
		"//go:build cgo\n\npackage p\nimport \"C\"\n":                    true,
		"//go:build linux && cgo\n\npackage p\nimport \"C\"\n":           true,
		"//go:build (darwin || freebsd) && go1.21\n\npackage p\n":        true,
		"//go:build icu\n\npackage p\nimport \"C\"\n":                    false,
		"//go:build cgo && mytag\n\npackage p\nimport \"C\"\n":           false,
		"//go:build !cgo\n\npackage p\nimport \"C\"\n":                   false,
		"// a comment\n\n//go:build ignore\n\npackage p\nimport \"C\"\n": false,
		"package p\n\n//go:build icu\nimport \"C\"\n":                    true, // not a build line after package
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "f.go", src, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := builtWithCgo(f); got != want {
			t.Errorf("builtWithCgo(%q) = %v, want %v", src, got, want)
		}
	}
}
