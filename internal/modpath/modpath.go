// Package modpath maps directories to Go import paths by the go.mod of the
// module that holds them.
package modpath

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
)

// ImportPath returns the Go import path of the package in dir, from the
// go.mod of the module that holds it.
func ImportPath(dir string) (string, error) {
	root, mod, err := find(dir)
	if err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(dir)
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return mod, nil
	}
	return mod + "/" + filepath.ToSlash(rel), nil
}

// Root returns the absolute directory of the go.mod of the module that
// holds dir.
func Root(dir string) (string, error) {
	root, _, err := find(dir)
	return root, err
}

// find walks up from dir to the first go.mod and returns its directory and
// module path.
func find(dir string) (root, module string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for root := abs; ; root = filepath.Dir(root) {
		data, err := os.ReadFile(filepath.Join(root, "go.mod"))
		if err == nil {
			mod := modfile.ModulePath(data)
			if mod == "" {
				return "", "", fmt.Errorf("%s has no module line", filepath.Join(root, "go.mod"))
			}
			return root, mod, nil
		}
		if filepath.Dir(root) == root {
			return "", "", fmt.Errorf("%s is not inside a Go module (no go.mod above it)", abs)
		}
	}
}
