package schemas

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	"github.com/flowgen-dev/flowgen/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the schema files from the Go types")

func TestSchemasInSync(t *testing.T) {
	for name, gen := range Published {
		want, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(name, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with the Go types; run go test ./schemas -update:\n%s", name, testutil.Diff(name, got, "from the Go types", want))
		}
	}
}

// TestExamplesValidateAgainstSchemas checks that the published schemas accept
// every example file, so an editor using them agrees with flowgen validate.
func TestExamplesValidateAgainstSchemas(t *testing.T) {
	c := jsonschema.NewCompiler()
	for name, data := range map[string][]byte{"connectorspec.schema.json": ConnectorSpecJSON, "flowir.schema.json": FlowJSON} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
	}
	specSchema := c.MustCompile("connectorspec.schema.json")
	flowSchema := c.MustCompile("flowir.schema.json")
	files, _ := filepath.Glob("../examples/*/*.yaml")
	more, _ := filepath.Glob("../examples/connectors/*/*.yaml")
	files = append(files, more...)
	if len(files) < 8 {
		t.Fatalf("found only %d example files", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		js, _ := json.Marshal(v)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		sch := specSchema
		if flowir.FileKind(data) == flowir.Kind {
			sch = flowSchema
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s does not validate against its published schema: %v", f, err)
		}
		canon := canonicalJSON(t, f, data)
		inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(canon))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: canonical JSON does not validate against its published schema: %v", f, err)
		}
		if again := canonicalJSON(t, f+".json", canon); !bytes.Equal(again, canon) {
			t.Errorf("%s: canonical JSON is not a fixed point:\n%s\nthen\n%s", f, canon, again)
		}
	}
}

// canonicalJSON parses a spec or flow strictly and renders its canonical
// JSON form, failing on any parse error.
func canonicalJSON(t *testing.T, path string, data []byte) []byte {
	t.Helper()
	var doc any
	var diags diag.List
	if flowir.FileKind(data) == flowir.Kind {
		doc, diags = flowir.ParseFlow(path, data)
	} else {
		doc, diags = connectorspec.Parse(path, data)
	}
	if diags.HasErrors() {
		t.Fatalf("%s: %v", path, diags)
	}
	out, err := strictyaml.CanonicalJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReferenceInSync keeps docs/reference (the field reference of both
// formats) generated from the published schemas; -update rewrites it.
func TestReferenceInSync(t *testing.T) {
	for page, ref := range References {
		want, err := Reference(ref.Schema, ref.Title, ref.File, ref.Command)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "docs", "reference", page)
		if *update {
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v; run go test ./schemas -update", path, err)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date with the schemas; run go test ./schemas -update:\n%s", path, testutil.Diff(path, got, "from the schemas", want))
		}
	}
}
