// Package testutil holds helpers shared by this module's tests.
package testutil

import (
	"os"
	"path/filepath"
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
