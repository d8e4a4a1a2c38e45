// Package artifact packages a connector as a Go module zip (golang.org/x/mod/zip)
// with a manifest, the unit that is certified, signed, published and pulled.
//
// An artifact's identity is the sha256 of its zip. Building is deterministic:
// the same connector directory gives the same bytes, whatever the file
// modification times, the checkout path or the machine.
//
// A connector directory that is the root of its own module is zipped as that
// module. A connector that lives inside a larger module (as the examples do)
// becomes a standalone module: its go.mod is synthesized from the enclosing
// module's (same go version and requirements, plus a requirement on the
// enclosing module itself for the packages it imports from there), and the
// schema files its spec refers to outside the directory travel in the zip
// under [ExternalDir], so that [Extract] can lay the spec out again and it
// loads unchanged.
package artifact

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/atomicfile"
	"github.com/flowgen-dev/flowgen/internal/modpath"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// Format names the manifest layout; readers refuse other values.
const Format = "flowgen.dev/artifact/v1"

// ExternalDir is the directory inside the zip that holds the schema files the
// spec refers to outside the connector directory.
const ExternalDir = "_flowgen/external"

// ModulePrefix is the module path prefix given to a connector that is not the
// root of its own module: payments.charge 1.4.0 becomes
// flowgen.dev/connectors/payments/charge, and 2.1.0
// flowgen.dev/connectors/payments/charge/v2 (semantic import versioning).
const ModulePrefix = "flowgen.dev/connectors"

// skipDirs are never packaged: certification output and VCS metadata.
var skipDirs = map[string]bool{"certification": true, ".git": true, ".hg": true, ".svn": true, ".bzr": true}

// Manifest describes an artifact. It is stored and served beside the zip
// and is what the registry indexes and pull policies read.
type Manifest struct {
	Format string `json:"format"`
	// Module and Version are the Go module identity (Version is "v" plus the
	// spec's version).
	Module  string `json:"module"`
	Version string `json:"version"`
	// Connector is the spec's id and ConnectorVersion its version.
	Connector        string `json:"connector"`
	ConnectorVersion string `json:"connector_version"`
	// Digest is "sha256:" and the hex sha256 of the zip; Size its length.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	// Dir is where the module goes, relative to the root that Extract
	// recreates (the module's own directory name, or deeper when external
	// schemas sit beside a parent).
	Dir string `json:"dir"`
	// External maps each directory of schema files carried under
	// ExternalDir (relative to the layout root) to the import path of the Go
	// package generated from it.
	External map[string]string `json:"external,omitempty"`
	// Files lists every file in the zip (module-relative) with its sha256.
	Files []File `json:"files"`
	// Spec is the connector's manifest: the spec as canonical JSON with its
	// schemas bundled.
	Spec json.RawMessage `json:"spec"`
}

// File is one packaged file.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Artifact is a packaged connector.
type Artifact struct {
	Zip      []byte
	Manifest Manifest
}

// Options steer Build.
type Options struct {
	// Module overrides the module path of a connector that is not the root
	// of its own module (default ModulePrefix/<id with dots as slashes>).
	// It must agree with go.mod when the directory is a module root.
	Module string
}

// ErrSpecInvalid: the connector's spec does not load or has errors, so
// there is nothing to package.
var ErrSpecInvalid = errors.New("the spec has errors")

// Build packages the connector in dir. It fails, naming the problem, when
// the spec does not load, when a file cannot go into a module zip, or when
// the module path is invalid; nothing is written anywhere.
func Build(dir string, opts Options) (*Artifact, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	specPath := filepath.Join(abs, connectorspec.FileName)
	spec, diags := connectorspec.Load(specPath)
	if spec == nil || diags.HasErrors() {
		return nil, fmt.Errorf("package %s: %w:\n%v", dir, ErrSpecInvalid, diags.Err())
	}
	specJSON, err := connectorspec.Manifest(spec)
	if err != nil {
		return nil, fmt.Errorf("package %s: manifest: %w", dir, err)
	}
	files, err := moduleFiles(abs)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", dir, err)
	}
	mod, err := moduleIdentity(abs, spec, opts, files)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", dir, err)
	}
	layoutDir, externals, imports, err := externalFiles(abs, spec.SchemaFiles())
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", dir, err)
	}
	for _, f := range externals {
		files[f.path] = f.data
	}
	if err := checkBuildControls(files); err != nil {
		return nil, fmt.Errorf("package %s: %w", dir, err)
	}
	names := slices.Sorted(maps.Keys(files))
	zfiles := make([]modzip.File, 0, len(names))
	m := Manifest{Format: Format, Module: mod.Path, Version: mod.Version, Connector: spec.ID,
		ConnectorVersion: spec.Version, Dir: layoutDir, External: imports, Spec: specJSON}
	for _, name := range names {
		data := files[name]
		zfiles = append(zfiles, memFile{name: name, data: data})
		sum := sha256.Sum256(data)
		m.Files = append(m.Files, File{Path: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))})
	}
	var buf bytes.Buffer
	if err := modzip.Create(&buf, mod, zfiles); err != nil {
		return nil, fmt.Errorf("package %s: %w", dir, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	m.Digest = "sha256:" + hex.EncodeToString(sum[:])
	m.Size = int64(buf.Len())
	return &Artifact{Zip: buf.Bytes(), Manifest: m}, nil
}

// Digest returns the artifact digest ("sha256:<hex>") of zip bytes.
func Digest(zipData []byte) string {
	sum := sha256.Sum256(zipData)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// moduleFiles reads every file under dir that belongs in the module, keyed
// by slash path: nested modules, certification output and VCS metadata are
// left out, as are the go.mod and go.sum of an enclosing module (which
// moduleIdentity supplies).
func moduleFiles(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module is not ours
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files can be packaged", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	return files, err
}

// moduleIdentity decides the module path and version, synthesizing go.mod
// and go.sum into files when dir is not a module root.
func moduleIdentity(dir string, spec *connectorspec.Spec, opts Options, files map[string][]byte) (module.Version, error) {
	version := "v" + spec.Version
	if gomod, ok := files["go.mod"]; ok {
		path := modfile.ModulePath(gomod)
		if path == "" {
			return module.Version{}, fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
		}
		if opts.Module != "" && opts.Module != path {
			return module.Version{}, fmt.Errorf("--module %s disagrees with go.mod, which says %s", opts.Module, path)
		}
		mv := module.Version{Path: path, Version: version}
		if err := module.Check(path, version); err != nil {
			return mv, fmt.Errorf("%w (a module at major version 2 or later ends its path in /vN)", err)
		}
		return mv, nil
	}
	root, err := enclosingModule(dir)
	if err != nil {
		return module.Version{}, err
	}
	path := opts.Module
	if path == "" {
		path = ModulePrefix + "/" + strings.ReplaceAll(spec.ID, ".", "/")
		if major := semver.Major(version); major != "v0" && major != "v1" {
			path += "/" + major // semantic import versioning
		}
	}
	if err := module.Check(path, version); err != nil {
		return module.Version{}, err
	}
	gomodPath := filepath.Join(root, "go.mod")
	data, err := os.ReadFile(gomodPath)
	if err != nil {
		return module.Version{}, err
	}
	parent, err := modfile.ParseLax(gomodPath, data, nil)
	if err != nil {
		return module.Version{}, err
	}
	reqs, err := requirements(dir, parent.Module.Mod.Path)
	if err != nil {
		return module.Version{}, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "module %s\n", modfile.AutoQuote(path))
	if parent.Go != nil {
		fmt.Fprintf(&b, "\ngo %s\n", parent.Go.Version)
	}
	for _, indirect := range []bool{false, true} {
		var block []string
		for _, r := range reqs {
			if r.Indirect == indirect {
				line := "\t" + modfile.AutoQuote(r.Mod.Path) + " " + r.Mod.Version
				if indirect {
					line += " // indirect"
				}
				block = append(block, line)
			}
		}
		if len(block) > 0 {
			fmt.Fprintf(&b, "\nrequire (\n%s\n)\n", strings.Join(block, "\n"))
		}
	}
	gomod := b.Bytes()
	if _, err := modfile.Parse("go.mod", gomod, nil); err != nil {
		return module.Version{}, fmt.Errorf("synthesized go.mod: %w", err)
	}
	files["go.mod"] = gomod
	if sum, err := os.ReadFile(filepath.Join(root, "go.sum")); err == nil {
		files["go.sum"] = sum
	}
	return module.Version{Path: path, Version: version}, nil
}

// enclosingModule returns the directory of the go.mod above dir.
func enclosingModule(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside a Go module (no go.mod above it)", dir)
		}
	}
}

type external struct {
	path string
	data []byte
}

// externalFiles carries the schema directories outside dir that the spec
// refers to: every *.schema.json there and the shared Go types generated
// from them, laid out under ExternalDir relative to the deepest directory
// that holds them and dir. It returns dir's place in that layout and, for
// each external directory, the Go import path of its generated package, so
// that the generator computes the same imports after Extract.
func externalFiles(dir string, schemaFiles []string) (string, []external, map[string]string, error) {
	dirs := map[string]bool{}
	for _, f := range schemaFiles {
		if !within(dir, f) {
			dirs[filepath.Dir(f)] = true
		}
	}
	base := filepath.Base(dir)
	if len(dirs) == 0 {
		return base, nil, nil, nil
	}
	root := dir
	for d := range dirs {
		for !within(root, d) {
			root = filepath.Dir(root)
		}
	}
	layoutDir, _ := filepath.Rel(root, dir)
	var out []external
	imports := map[string]string{}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		relDir, _ := filepath.Rel(root, d)
		imp, err := modpath.ImportPath(d)
		if err != nil {
			return "", nil, nil, err
		}
		imports[filepath.ToSlash(relDir)] = imp
		entries, err := os.ReadDir(d)
		if err != nil {
			return "", nil, nil, err
		}
		for _, e := range entries {
			if e.IsDir() || !(strings.HasSuffix(e.Name(), ".schema.json") || e.Name() == connectorspec.TypesFile) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				return "", nil, nil, err
			}
			out = append(out, external{path: path.Join(ExternalDir, filepath.ToSlash(relDir), e.Name()), data: data})
		}
	}
	return filepath.ToSlash(layoutDir), out, imports, nil
}

func within(root, f string) bool {
	rel, err := filepath.Rel(root, f)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// MaxUnpackedSize bounds the total size of an artifact's files once
// unpacked; a zip that declares or inflates to more is refused (zip bombs).
const MaxUnpackedSize = 128 << 20

// Check verifies an artifact without writing anything: the zip's digest is
// the manifest's; it is a readable zip whose every entry is a regular file
// under module@version/ with a valid module file path, listed in the
// manifest with that sha256 and size; no listed file is missing; the
// manifest's dir and external entries stay inside the layout root; the
// files unpack to at most MaxUnpackedSize in total; and the zip passes every
// check the go command applies to module zips (no two names that differ
// only in case, among others). It returns the files
// by module-relative path.
func Check(a *Artifact) (map[string][]byte, error) {
	m := a.Manifest
	if m.Format != Format {
		return nil, fmt.Errorf("artifact manifest: format %q, want %q", m.Format, Format)
	}
	if got := Digest(a.Zip); got != m.Digest {
		return nil, fmt.Errorf("artifact digest %s does not match the manifest's %s", got, m.Digest)
	}
	if err := module.Check(m.Module, m.Version); err != nil {
		return nil, fmt.Errorf("artifact manifest: %w", err)
	}
	if m.Dir == "" || !filepath.IsLocal(filepath.FromSlash(m.Dir)) {
		return nil, fmt.Errorf("artifact manifest: dir %q leaves the extraction root", m.Dir)
	}
	for rel, imp := range m.External {
		if !filepath.IsLocal(filepath.FromSlash(rel)) || module.CheckImportPath(imp) != nil {
			return nil, fmt.Errorf("artifact manifest: bad external %q = %q", rel, imp)
		}
	}
	want := map[string]File{}
	var total int64
	for _, f := range m.Files {
		if f.Size < 0 {
			return nil, fmt.Errorf("artifact manifest: %s has a negative size", f.Path)
		}
		total += f.Size
		want[f.Path] = f
	}
	if total > MaxUnpackedSize {
		return nil, fmt.Errorf("artifact manifest: files unpack to %d bytes, more than the %d allowed", total, MaxUnpackedSize)
	}
	zr, err := zip.NewReader(bytes.NewReader(a.Zip), int64(len(a.Zip)))
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %w", err)
	}
	prefix := m.Module + "@" + m.Version + "/"
	files := make(map[string][]byte, len(zr.File))
	for _, zf := range zr.File {
		name, ok := strings.CutPrefix(zf.Name, prefix)
		if !ok {
			return nil, fmt.Errorf("artifact zip: %s is outside %s", zf.Name, prefix)
		}
		if err := module.CheckFilePath(name); err != nil {
			return nil, fmt.Errorf("artifact zip: %w", err)
		}
		if !zf.Mode().IsRegular() {
			return nil, fmt.Errorf("artifact zip: %s is not a regular file (%s)", name, zf.Mode().Type())
		}
		w, listed := want[name]
		if !listed {
			return nil, fmt.Errorf("artifact zip: %s is not in the manifest's file list", name)
		}
		if _, dup := files[name]; dup {
			return nil, fmt.Errorf("artifact zip: %s appears twice", name)
		}
		data, err := readZipFile(zf, w.Size)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != w.Size || w.SHA256 != hex.EncodeToString(sum[:]) {
			return nil, fmt.Errorf("artifact zip: %s does not match the manifest's file list", name)
		}
		files[name] = data
	}
	if len(files) != len(want) {
		for _, p := range slices.Sorted(maps.Keys(want)) {
			if _, ok := files[p]; !ok {
				return nil, fmt.Errorf("artifact zip: %d file(s) of the manifest are missing, e.g. %s", len(want)-len(files), p)
			}
		}
	}
	if err := checkModuleZip(m, a.Zip); err != nil {
		return nil, err
	}
	if err := checkBuildControls(files); err != nil {
		return nil, err
	}
	return files, nil
}

// checkModuleZip applies every rule of a module zip that the go command
// applies (golang.org/x/mod/zip.CheckZip): valid and unique file paths,
// no two that differ only in case, no vendor or VCS oddities, size limits.
func checkModuleZip(m Manifest, zipData []byte) error {
	f, err := os.CreateTemp("", "flowgen-artifact-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(zipData)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	cf, err := modzip.CheckZip(module.Version{Path: m.Module, Version: m.Version}, f.Name())
	if err == nil {
		err = cf.Err()
	}
	if err != nil {
		return fmt.Errorf("artifact zip: not a valid module zip: %w", err)
	}
	return nil
}

// Extract lays the artifact out under root as [Build] found it: the module in
// root/Manifest.Dir, the external schema files where the spec expects them.
// It runs [Check] first, so nothing is written for an artifact that fails
// it. It returns the connector directory.
func Extract(a *Artifact, root string) (string, error) {
	files, err := Check(a)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(a.Manifest.Dir))
	for _, name := range slices.Sorted(maps.Keys(files)) {
		target := filepath.Join(dir, filepath.FromSlash(name))
		if ext, ok := strings.CutPrefix(name, ExternalDir+"/"); ok {
			target = filepath.Join(root, filepath.FromSlash(ext))
		}
		if !within(root, target) {
			return "", fmt.Errorf("artifact zip: %s leaves the extraction root", name)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(target, files[name], 0o644); err != nil {
			return "", err
		}
	}
	for rel, imp := range a.Manifest.External {
		// A go.mod naming the original package, so that the generator
		// computes the same import path; the build never uses it.
		target := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(target, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(target, "go.mod"), []byte("module "+imp+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// readZipFile reads one entry, refusing more than size bytes whatever the
// entry header claims.
func readZipFile(zf *zip.File, size int64) ([]byte, error) {
	if zf.UncompressedSize64 != uint64(size) {
		return nil, fmt.Errorf("artifact zip: %s declares %d bytes, the manifest %d", zf.Name, zf.UncompressedSize64, size)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %s: %w", zf.Name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, size+1))
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %s: %w", zf.Name, err)
	}
	return data, nil
}

// Write stores the artifact as NAME.zip and NAME.json (the manifest, canonical
// JSON) in dir, each through a temporary file and rename so that a reader
// never sees half of either. It returns both paths.
func Write(a *Artifact, dir, name string) (zipPath, manifestPath string, err error) {
	mj, err := a.Manifest.JSON()
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	zipPath, manifestPath = filepath.Join(dir, name+".zip"), filepath.Join(dir, name+".json")
	if err := atomicfile.Write(zipPath, a.Zip, 0o644); err != nil {
		return "", "", err
	}
	if err := atomicfile.Write(manifestPath, mj, 0o644); err != nil {
		return "", "", err
	}
	return zipPath, manifestPath, nil
}

// Read loads an artifact written by Write and checks its digest.
func Read(zipPath, manifestPath string) (*Artifact, error) {
	z, err := os.ReadFile(zipPath)
	if err != nil {
		return nil, err
	}
	mj, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(mj, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", manifestPath, err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("%s: format %q, want %q", manifestPath, m.Format, Format)
	}
	if got := Digest(z); got != m.Digest {
		return nil, fmt.Errorf("%s: digest %s, but the manifest %s says %s", zipPath, got, manifestPath, m.Digest)
	}
	return &Artifact{Zip: z, Manifest: m}, nil
}

// JSON renders the manifest as canonical JSON (sorted keys), the form that is
// stored and signed.
func (m Manifest) JSON() ([]byte, error) {
	return strictyaml.SortedJSON(m)
}

// memFile is a zip entry held in memory, with a fixed mode and no
// modification time so that the zip depends only on content.
type memFile struct {
	name string
	data []byte
}

func (f memFile) Path() string                 { return f.name }
func (f memFile) Lstat() (os.FileInfo, error)  { return memInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memInfo memFile

func (i memInfo) Name() string       { return path.Base(i.name) }
func (i memInfo) Size() int64        { return int64(len(i.data)) }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// SpecDigest is the hex sha256 that certification records for the
// manifest's spec (certify.Report.ManifestDigest): the digest of its
// canonical JSON, so that it survives re-encoding of the manifest.
func (m Manifest) SpecDigest() (string, error) {
	var doc any
	if err := json.Unmarshal(m.Spec, &doc); err != nil {
		return "", fmt.Errorf("artifact manifest: spec: %w", err)
	}
	canonical, err := strictyaml.CanonicalJSON(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// ZipFile returns the file name (a full zip entry name, module@version/path)
// from a zip, reading at most MaxUnpackedSize bytes.
func ZipFile(zipData []byte, name string) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %w", err)
	}
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %w", err)
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxUnpackedSize))
}
