package connectorspec

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
)

// Load reads the ConnectorSpec at path, resolves and compiles its schemas and
// checks it. It returns the spec (nil only when the file could not be read or
// parsed at all) and every diagnostic found; diags.Err() is nil when the spec
// is usable.
func Load(path string) (*Spec, diag.List) {
	data, err := strictyaml.ReadFile(path)
	if err != nil {
		var diags diag.List
		diags.Add(diag.Pos{File: path}, diag.FMT001, "", "cannot read spec: %v", err)
		return nil, diags
	}
	return Parse(path, data)
}

// Parse is Load for a spec whose bytes are already in memory; path locates
// $ref files and names the file in diagnostics.
func Parse(path string, data []byte) (*Spec, diag.List) {
	var s Spec
	root, diags := strictyaml.Unmarshal(path, data, &s)
	if root == nil {
		return nil, diags
	}
	s.File = path
	checkHeader(&diags, s.Source, s.APIVersion, s.Kind, Kind)
	s.Fixtures = append(s.Fixtures, fixtureFiles(path, &diags)...)
	docs := newSchemaDocs(&diags)
	s.compiled = compileAll(&s, docs, &diags)
	s.schemaFiles = sortedKeys(docs.docs)
	c := checker{spec: &s, docs: docs, diags: &diags, dir: filepath.Dir(path)}
	c.run()
	diags.Sort()
	return &s, diags
}

// checkHeader reports a missing or unsupported apiVersion/kind pair. It is
// shared with the flow format, whose header has the same shape.
func checkHeader(diags *diag.List, src diag.Source, apiVersion, kind, wantKind string) {
	if src.Has("apiVersion") && apiVersion != APIVersion {
		diags.Add(src.At("apiVersion"), diag.FMT007, fmt.Sprintf("write apiVersion: %s", APIVersion),
			"unsupported apiVersion %q", apiVersion)
	}
	if src.Has("kind") && kind != wantKind {
		diags.Add(src.At("kind"), diag.FMT007, fmt.Sprintf("write kind: %s, or validate this file as a %s", wantKind, kind),
			"kind %q where %s was expected", kind, wantKind)
	}
}

// CheckHeader is checkHeader for other formats in this module.
func CheckHeader(diags *diag.List, src diag.Source, apiVersion, kind, wantKind string) {
	checkHeader(diags, src, apiVersion, kind, wantKind)
}

// compileAll resolves and compiles params and port schemas, reporting
// SCHEMA001/SCHEMA002, and returns those that compiled.
func compileAll(s *Spec, docs *schemaDocs, diags *diag.List) map[string]*jsonschema.Schema {
	out := map[string]*jsonschema.Schema{}
	dir := filepath.Dir(s.File)
	compile := func(name string, r strictyaml.Raw) {
		if r.Value == nil {
			return
		}
		if _, isObj := r.Value.(map[string]any); !isObj {
			if _, isBool := r.Value.(bool); !isBool {
				diags.Add(r.Pos, diag.SCHEMA001, "write a JSON Schema object such as {type: object, properties: {...}}",
					"%s: a JSON Schema must be an object or a boolean", name)
				return
			}
		}
		if !docs.checkRefs(r, dir) {
			return
		}
		sch, err := docs.compileSchema(s.File, name, r)
		var se *schemaError
		if errors.As(err, &se) {
			for _, p := range se.problems {
				diags.Add(p.Pos, diag.SCHEMA001, "see https://json-schema.org/draft/2020-12 for the keyword's allowed values",
					"%s: invalid JSON Schema at %s: %s", name, cmp.Or(p.Loc, "/"), p.Msg)
			}
			return
		} else if err != nil {
			diags.Add(r.Pos, diag.SCHEMA001, "", "%s: invalid JSON Schema: %v", name, err)
			return
		}
		out[name] = sch
	}
	compile("params", s.Params)
	for _, name := range sortedKeys(s.Inputs) {
		compile("inputs/"+name, s.Inputs[name])
	}
	for _, name := range sortedKeys(s.Outputs) {
		compile("outputs/"+name, s.Outputs[name])
	}
	return out
}

// FixtureDir is the directory next to a spec whose files each hold one more
// fixture (a YAML or JSON object with the fields of a fixtures: entry), for
// fixtures too large to keep in the spec. They follow the spec's own
// fixtures, in file name order, and are checked the same way.
const FixtureDir = "fixtures"

// fixtureFiles loads the fixtures in the FixtureDir next to specPath.
func fixtureFiles(specPath string, diags *diag.List) []Fixture {
	dir := filepath.Join(filepath.Dir(specPath), FixtureDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no directory: no extra fixtures
	}
	var out []Fixture
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := strictyaml.ReadFile(path)
		if err != nil {
			diags.Add(diag.Pos{File: path}, diag.FMT001, "", "cannot read fixture: %v", err)
			continue
		}
		var fx Fixture
		root, ds := strictyaml.Unmarshal(path, data, &fx)
		diags.Append(ds)
		if root != nil && !ds.HasErrors() {
			out = append(out, fx)
		}
	}
	return out
}
