// Package flowgenmod makes the flowgen module a Go module version that a
// registry can serve, so that a pulled connector resolves its runtime with
// the stock go command and no replace directive.
//
// Until flowgen is published, a checkout has no version of its own. Its
// version is derived from its content: v0.0.0-00010101000000-<hash> where
// hash is the first 12 hex digits of the SHA-256 over every file the
// module's packages are built from. The same checkout gives the same
// version on every machine, and any change to the code a connector
// builds against gives another one. A module the go command resolved from
// a proxy keeps the version it has.
package flowgenmod

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/flowgen-dev/flowgen/internal/golist"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Path is the flowgen module's path.
const Path = "github.com/flowgen-dev/flowgen"

// pseudoPrefix is the fixed part of a content-derived version.
const pseudoPrefix = "v0.0.0-00010101000000-"

// Module is the flowgen module of one directory as a module version.
type Module struct {
	Dir     string
	Version string
	// Zip is the module zip the go command downloads; GoMod its go.mod.
	Zip   []byte
	GoMod []byte
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*Module{}
)

// Build makes the module version of the flowgen checkout in dir: the zip
// holds go.mod, go.sum, LICENSE and README.md when present, and every
// file of every package below dir that is not a test (go list ./...),
// including files other platforms' builds use and embedded files. A
// process builds each directory once.
func Build(ctx context.Context, dir string) (*Module, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if m, ok := cache[abs]; ok {
		return m, nil
	}
	files, err := moduleFiles(ctx, abs)
	if err != nil {
		return nil, fmt.Errorf("flowgen module in %s: %w", abs, err)
	}
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(abs, f))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", f, sum)
	}
	m := &Module{Dir: abs, Version: pseudoPrefix + hex.EncodeToString(h.Sum(nil))[:12]}
	if m.GoMod, err = os.ReadFile(filepath.Join(abs, "go.mod")); err != nil {
		return nil, err
	}
	zfiles := make([]modzip.File, len(files))
	for i, f := range files {
		zfiles[i] = diskFile{root: abs, name: f}
	}
	var buf bytes.Buffer
	if err := modzip.Create(&buf, module.Version{Path: Path, Version: m.Version}, zfiles); err != nil {
		return nil, fmt.Errorf("flowgen module zip: %w", err)
	}
	m.Zip = buf.Bytes()
	cache[abs] = m
	return m, nil
}

// listedPackage is what go list -json says of a package that matters here.
type listedPackage struct {
	Dir                                                     string
	GoFiles, CgoFiles, IgnoredGoFiles, IgnoredOtherFiles    []string
	CFiles, CXXFiles, HFiles, SFiles, SysoFiles, EmbedFiles []string
	Module                                                  *struct{ Path string }
}

// moduleFiles lists the module's files, slash-separated and relative to
// root, sorted.
func moduleFiles(ctx context.Context, root string) ([]string, error) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(gomod, []byte("module "+Path+"\n")) {
		return nil, fmt.Errorf("%s/go.mod is not the %s module", root, Path)
	}
	pkgs, err := golist.Packages[listedPackage](ctx, root, []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "-e", "./...")
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, top := range []string{"go.mod", "go.sum", "LICENSE", "README.md"} {
		if _, err := os.Stat(filepath.Join(root, top)); err == nil {
			set[top] = true
		}
	}
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != Path {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles, p.IgnoredOtherFiles, p.CFiles, p.CXXFiles, p.HFiles, p.SFiles, p.SysoFiles, p.EmbedFiles} {
			for _, f := range list {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				set[filepath.ToSlash(filepath.Join(rel, f))] = true
			}
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for f := range set {
			if !yield(f) {
				return
			}
		}
	}), nil
}

// diskFile is a modzip.File read from disk.
type diskFile struct{ root, name string }

func (f diskFile) Path() string { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error) {
	return os.Lstat(filepath.Join(f.root, filepath.FromSlash(f.name)))
}
func (f diskFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.name)))
}

// Used is the flowgen module a connector in dir builds against: the
// directory of its source and its version. A checkout (the main module,
// or a replace to a directory) gets its content-derived version; a module
// the go command downloaded keeps its own.
func Used(ctx context.Context, dir string) (srcDir, version string, err error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", Path)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("which flowgen %s uses: go list -m %s: %v\n%s", dir, Path, err, stderr.Bytes())
	}
	var m struct {
		Version string
		Main    bool
		Dir     string
		Replace *struct{ Version, Dir string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", err
	}
	switch {
	case m.Replace != nil && m.Replace.Version == "" && m.Replace.Dir != "":
		mod, err := Build(ctx, m.Replace.Dir)
		if err != nil {
			return "", "", err
		}
		return mod.Dir, mod.Version, nil
	case m.Replace != nil:
		return m.Replace.Dir, m.Replace.Version, nil
	case m.Main:
		mod, err := Build(ctx, m.Dir)
		if err != nil {
			return "", "", err
		}
		return mod.Dir, mod.Version, nil
	}
	return m.Dir, m.Version, nil
}
