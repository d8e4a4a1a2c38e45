package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/internal/modpath"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// sharedPackage is the Go package generated for a directory of JSON Schema
// files that connectors in other directories refer to. Its types are
// generated once, from the files alone, so every connector that refers to
// order.schema.json uses the same Go type and flows can connect them.
type sharedPackage struct {
	dir, importPath, name string
	files                 []string
	m                     *model
}

// sharedSet builds each shared package once per generator run.
type sharedSet struct {
	pkgs map[string]*sharedPackage
	errs map[string]error
}

func newSharedSet() *sharedSet {
	return &sharedSet{pkgs: map[string]*sharedPackage{}, errs: map[string]error{}}
}

// sorted lists the packages built, by directory.
func (ss *sharedSet) sorted() []*sharedPackage {
	var out []*sharedPackage
	for _, dir := range sortedKeysOf(ss.pkgs) {
		out = append(out, ss.pkgs[dir])
	}
	return out
}

// schemaExts are the extensions of schema files in a shared directory.
var schemaExts = []string{".json", ".yaml", ".yml"}

func (ss *sharedSet) get(dir string) (*sharedPackage, error) {
	if p, ok := ss.pkgs[dir]; ok {
		return p, nil
	}
	if err, ok := ss.errs[dir]; ok {
		return nil, err
	}
	p, err := buildShared(dir, ss)
	if err != nil {
		ss.errs[dir] = err
		return nil, err
	}
	ss.pkgs[dir] = p
	return p, nil
}

// buildShared models every schema file of dir and every entry of their
// $defs, in file and key order.
func buildShared(dir string, ss *sharedSet) (*sharedPackage, error) {
	importPath, err := modpath.ImportPath(dir)
	if err != nil {
		return nil, withFix("keep the spec and the schema files it refers to inside one Go module (run go mod init at its root)",
			fmt.Errorf("shared schemas in %s: %w", dir, err))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("shared schemas: %w", err)
	}
	p := &sharedPackage{dir: dir, importPath: importPath, name: packageOf(dir), m: newModel()}
	p.m.home, p.m.shared = dir, ss
	for _, e := range entries {
		if e.IsDir() || !slices.Contains(schemaExts, filepath.Ext(e.Name())) {
			continue
		}
		// Flows beside the schemas are not schemas; a connector beside them
		// would generate its own types_gen.go there.
		if data, err := strictyaml.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			switch flowir.FileKind(data) {
			case connectorspec.Kind:
				return nil, withFix("move the shared schema files into a directory without specs, such as schemas/, and update the $refs",
					fmt.Errorf("shared schemas in %s: the directory also holds the connector %s; schema files several connectors use need a directory of their own (like schemas/)", dir, e.Name()))
			case "":
			default:
				continue
			}
		}
		p.files = append(p.files, e.Name())
	}
	for _, f := range p.files {
		path := filepath.Join(dir, f)
		root, err := connectorspec.CompileFile(path, "")
		if err != nil {
			return nil, fmt.Errorf("shared schema %s: %w", path, err)
		}
		if len(typeNames(root)) == 1 || len(root.OneOf) > 0 {
			p.m.typeOf(refName(root), "", root)
		}
		for _, key := range defsKeys(path) {
			def, err := connectorspec.CompileFile(path, "/$defs/"+strictyaml.PointerEscape(key))
			if err != nil {
				return nil, fmt.Errorf("shared schema %s#/$defs/%s: %w", path, key, err)
			}
			p.m.typeOf(refName(def), "", def)
		}
	}
	if len(p.m.problems) > 0 {
		msgs := make([]string, len(p.m.problems))
		for i, pr := range p.m.problems {
			msgs[i] = pr.msg
		}
		return nil, fmt.Errorf("shared schemas in %s: %s", dir, strings.Join(msgs, "; "))
	}
	return p, nil
}

// defsKeys lists the $defs entries of a schema file, sorted.
func defsKeys(path string) []string {
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		return nil
	}
	var r strictyaml.Raw
	if _, diags := strictyaml.Unmarshal(path, data, &r); diags.HasErrors() {
		return nil
	}
	doc, _ := r.JSON().(map[string]any)
	defs, _ := doc["$defs"].(map[string]any)
	return sortedKeysOf(defs)
}
