// Package sbom describes a connector and everything it is built from as an
// SPDX 2.3 document (github.com/spdx/tools-golang): the connector's
// package, every module its code depends on with its version, its go.sum
// hash and a package URL (pkg:golang/...), and the dependency
// relationships between them, from the module graph. The same inputs give
// the same document, so it can be signed and compared.
package sbom

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"
	"github.com/spdx/tools-golang/spdxlib"
	"golang.org/x/tools/go/packages"
)

// Options are what the document says about its own making.
type Options struct {
	// Name and Version identify the connector (id and version from its spec).
	Name, Version string
	// Digest is the artifact's sha256 (hex); it makes the document
	// namespace unique.
	Digest string
	// Created is the creation time recorded (certification's clock).
	Created time.Time
	// Tool is the creating tool, e.g. "flowgen-v0.4.0".
	Tool string
	// Env is the environment of the go commands Generate runs (the
	// process's when nil).
	Env []string
}

// module is one module in the document.
type module struct {
	path, version, sum string // sum: go.sum h1 hash, "" for the main module
}

// Generate builds the document for the Go package in dir.
func Generate(dir string, opts Options) (*spdx.Document, error) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedModule | packages.NeedDeps | packages.NeedImports, Dir: dir, Env: opts.Env}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		return nil, fmt.Errorf("sbom: load %s: %w", dir, err)
	}
	if len(pkgs) != 1 || pkgs[0].Module == nil {
		return nil, fmt.Errorf("sbom: %s is not a package in a Go module", dir)
	}
	main := pkgs[0].Module
	used := map[string]module{}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		m := p.Module
		if m == nil || m.Main {
			return
		}
		if m.Replace != nil && m.Replace.Version != "" {
			m = m.Replace
		}
		used[m.Path] = module{path: m.Path, version: m.Version}
	})
	sums, err := goSums(filepath.Join(main.Dir, "go.sum"))
	if err != nil {
		return nil, err
	}
	mods := []module{}
	for _, path := range slices.Sorted(maps.Keys(used)) {
		m := used[path]
		m.sum = sums[m.path+" "+m.version]
		mods = append(mods, m)
	}
	edges, err := graph(main.Dir, opts.Env)
	if err != nil {
		return nil, err
	}
	return build(main.Path, pkgs[0].PkgPath, mods, edges, opts), nil
}

// goSums reads the module hashes (not the go.mod hashes) of a go.sum.
func goSums(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sbom: %w", err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			out[f[0]+" "+f[1]] = f[2]
		}
	}
	return out, sc.Err()
}

// graph returns the module requirement edges ("a@v b@v") of the main module.
func graph(dir string, env []string) ([][2]string, error) {
	cmd := exec.Command("go", "mod", "graph")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sbom: go mod graph: %w", err)
	}
	var edges [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if a, b, ok := strings.Cut(line, " "); ok {
			edges = append(edges, [2]string{a, b})
		}
	}
	return edges, nil
}

// spdxID makes an SPDX element id from a module path and version.
func spdxID(path, version string) common.ElementID {
	var b strings.Builder
	for _, r := range path + "-" + version {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return common.ElementID("Package-" + b.String())
}

func build(mainPath, pkgPath string, mods []module, edges [][2]string, opts Options) *spdx.Document {
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      opts.Name + "@" + opts.Version,
		DocumentNamespace: "https://flowgen.dev/spdx/" + opts.Name + "@" + opts.Version + "/" + opts.Digest,
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: opts.Tool}},
			Created:  opts.Created.UTC().Format(time.RFC3339),
		},
	}
	rootID := spdxID(pkgPath, opts.Version)
	doc.Packages = append(doc.Packages, &spdx.Package{
		PackageName:             pkgPath,
		PackageSPDXIdentifier:   rootID,
		PackageVersion:          opts.Version,
		PackageDownloadLocation: "NOASSERTION",
		PackageLicenseConcluded: "NOASSERTION",
		PackageLicenseDeclared:  "NOASSERTION",
		PackageCopyrightText:    "NOASSERTION",
		PackageComment:          "the connector " + opts.Name + ", in module " + mainPath,
		PrimaryPackagePurpose:   "LIBRARY",
		PackageChecksums:        digestChecksum(opts.Digest),
		PackageExternalReferences: []*spdx.PackageExternalReference{{
			Category: "PACKAGE-MANAGER", RefType: "purl", Locator: "pkg:golang/" + pkgPath + "@" + opts.Version,
		}},
	})
	doc.Relationships = append(doc.Relationships, &spdx.Relationship{
		RefA: common.MakeDocElementID("", "DOCUMENT"), RefB: common.MakeDocElementID("", string(rootID)), Relationship: "DESCRIBES",
	})
	ids := map[string]common.ElementID{mainPath: rootID}
	for _, m := range mods {
		id := spdxID(m.path, m.version)
		ids[m.path+"@"+m.version] = id
		p := &spdx.Package{
			PackageName:             m.path,
			PackageSPDXIdentifier:   id,
			PackageVersion:          m.version,
			PackageDownloadLocation: "https://proxy.golang.org/" + m.path + "/@v/" + m.version + ".zip",
			PackageLicenseConcluded: "NOASSERTION",
			PackageLicenseDeclared:  "NOASSERTION",
			PackageCopyrightText:    "NOASSERTION",
			PrimaryPackagePurpose:   "LIBRARY",
			PackageExternalReferences: []*spdx.PackageExternalReference{{
				Category: "PACKAGE-MANAGER", RefType: "purl", Locator: "pkg:golang/" + m.path + "@" + m.version,
			}},
		}
		if sum, ok := strings.CutPrefix(m.sum, "h1:"); ok {
			if raw, err := base64.StdEncoding.DecodeString(sum); err == nil {
				p.PackageChecksums = []common.Checksum{{Algorithm: common.SHA256, Value: hex.EncodeToString(raw)}}
				p.PackageComment = "go.sum " + m.sum + " (SHA-256 of the module's dirhash)"
			}
		}
		doc.Packages = append(doc.Packages, p)
	}
	// Requirement edges between modules in the document, from the graph;
	// the main module's edges start at the connector package.
	seen := map[[2]common.ElementID]bool{}
	for _, e := range edges {
		a, okA := ids[e[0]]
		b, okB := ids[e[1]]
		if !okA || !okB || a == b || seen[[2]common.ElementID{a, b}] {
			continue
		}
		seen[[2]common.ElementID{a, b}] = true
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: "DEPENDS_ON",
		})
	}
	// A module reached only through modules outside the document (or whose
	// requirer the graph does not list) still depends from the connector.
	reached := map[common.ElementID]bool{rootID: true}
	for _, r := range doc.Relationships[1:] {
		reached[r.RefB.ElementRefID] = true
	}
	for _, m := range mods {
		if id := ids[m.path+"@"+m.version]; !reached[id] {
			doc.Relationships = append(doc.Relationships, &spdx.Relationship{
				RefA: common.MakeDocElementID("", string(rootID)), RefB: common.MakeDocElementID("", string(id)), Relationship: "DEPENDS_ON",
			})
		}
	}
	slices.SortStableFunc(doc.Relationships[1:], func(x, y *spdx.Relationship) int {
		return strings.Compare(string(x.RefA.ElementRefID)+" "+string(x.RefB.ElementRefID), string(y.RefA.ElementRefID)+" "+string(y.RefB.ElementRefID))
	})
	return doc
}

func digestChecksum(digest string) []common.Checksum {
	if digest == "" {
		return nil
	}
	return []common.Checksum{{Algorithm: common.SHA256, Value: digest}}
}

// Validate checks what SPDX 2.3 requires of a document this package
// writes, and tools-golang's own relationship checks.
func Validate(doc *spdx.Document) error {
	var problems []string
	if doc.SPDXVersion != "SPDX-2.3" {
		problems = append(problems, "spdxVersion is "+doc.SPDXVersion)
	}
	if doc.DataLicense != "CC0-1.0" {
		problems = append(problems, "dataLicense must be CC0-1.0")
	}
	if doc.DocumentName == "" || doc.DocumentNamespace == "" || doc.CreationInfo == nil ||
		len(doc.CreationInfo.Creators) == 0 || doc.CreationInfo.Created == "" {
		problems = append(problems, "name, namespace, creators and created are required")
	}
	ids := map[common.ElementID]bool{}
	for _, p := range doc.Packages {
		if p.PackageName == "" || p.PackageSPDXIdentifier == "" || p.PackageDownloadLocation == "" {
			problems = append(problems, fmt.Sprintf("package %q lacks a name, id or download location", p.PackageName))
		}
		if ids[p.PackageSPDXIdentifier] {
			problems = append(problems, "duplicate package id "+string(p.PackageSPDXIdentifier))
		}
		ids[p.PackageSPDXIdentifier] = true
	}
	describes := false
	for _, r := range doc.Relationships {
		describes = describes || r.Relationship == "DESCRIBES"
	}
	if !describes {
		problems = append(problems, "no DESCRIBES relationship")
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("sbom: invalid SPDX document: %s", strings.Join(problems, "; "))
	}
	return nil
}
