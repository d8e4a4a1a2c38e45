package wasmbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// TestReproducible: the same connector source, built in two directories
// of different names, gives the same module bytes.
func TestReproducible(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(repo, "runtime/wasmhost/testdata/confined/writer")
	var digests []string
	for _, name := range []string{"first", "a-second-place-with-a-longer-name"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// A module of its own in a workspace with this checkout, as
		// certification lays out an artifact.
		files := map[string][]byte{
			"go.mod":  []byte("module example.com/writer\n\ngo 1.26.0\n"),
			"go.work": []byte("go 1.26.0\n\nuse (\n\t.\n\t" + repo + "\n)\n"),
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(src, e.Name())); err == nil && !strings.HasSuffix(e.Name(), "_test.go") {
				files[e.Name()] = b
			}
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		m, err := Build(ctx, dir, []flowtype.Capability{flowtype.HTTPWrite}, filepath.Join(dir, "module.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, m.Digest)
	}
	if digests[0] != digests[1] {
		t.Errorf("the same source built in two places: %s and %s", digests[0], digests[1])
	}
}

// TestRefusesWhatCannotRun: a package that starts processes, or is
// written in C, is named with the reason; Build refuses it before
// compiling anything.
func TestRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]string{
		"testdata/usesexec": "exec.go:4:8: github.com/flowgen-dev/flowgen/wasmbuild/testdata/usesexec imports os/exec: a confined connector starts no processes",
		"testdata/usescgo":  "github.com/flowgen-dev/flowgen/wasmbuild/testdata/usescgo: needs cgo (cgo.go), and no C code runs in a confined module",
	} {
		_, err := Build(context.Background(), dir, nil, filepath.Join(t.TempDir(), "m.wasm"))
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant a problem containing %q", dir, err, want)
		}
	}
}
