// Package testutil holds helpers shared by this module's tests.
package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// AddSeedFiles adds the contents of every file matching the globs to the
// fuzz corpus, failing the test when a match cannot be read.
func AddSeedFiles(f *testing.F, globs ...string) {
	f.Helper()
	for _, glob := range globs {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

// CosignVersion is the stock cosign .ci/cosign.sh builds for the interop
// tests.
const CosignVersion = "v2.6.5"

// CosignPath finds stock cosign: $FLOWGEN_COSIGN, else where .ci/cosign.sh
// caches it. The test fails (never skips) when it is absent.
func CosignPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FLOWGEN_COSIGN"); p != "" {
		return p
	}
	home, _ := os.UserCacheDir()
	p := filepath.Join(home, "flowgen", "cosign-"+CosignVersion, "cosign")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("stock cosign is not at %s: run .ci/cosign.sh (CI does) or set FLOWGEN_COSIGN", p)
	}
	return p
}

// CopyDir copies a directory tree of small files (modes 0755 and 0644).
func CopyDir(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// CopyFile copies one file (mode 0644).
func CopyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// SyncBuffer is a bytes.Buffer that a process or goroutine writes while a
// test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
