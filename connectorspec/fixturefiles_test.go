package connectorspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFixtureFilesAreLoadedAndChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := `apiVersion: flowgen.dev/v1
kind: ConnectorSpec
id: demo.echo
version: 1.0.0
provider: flowgen
summary: Echo.
effects: Pure
determinism: BestEffort
inputs:
  in: {type: object, x-data-class: public, required: [n], properties: {n: {type: integer, x-data-class: public}}}
outputs:
  out: {type: object, x-data-class: public, properties: {n: {type: integer, x-data-class: public}}}
fixtures:
  - {name: inline, input: {n: 1}, output: {n: 1}}
`
	files := map[string]string{
		"connector.yaml":       spec,
		"fixtures/a-good.yaml": "name: from-file\ninput: {n: 2}\noutput: {n: 2}\n",
		"fixtures/b-bad.yaml":  "name: bad\ninput: {n: two}\n",
		"fixtures/c-dup.json":  `{"name": "inline", "input": {"n": 3}}`,
		"fixtures/notes.txt":   "ignored",
		"fixtures/d-typo.yaml": "name: typo\ninptu: {n: 1}\n",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, diags := Load(filepath.Join(dir, "connector.yaml"))
	if s == nil {
		t.Fatal(diags)
	}
	var names []string
	for _, fx := range s.Fixtures {
		names = append(names, fx.Name)
	}
	if strings.Join(names, ",") != "inline,from-file,bad,inline" {
		t.Errorf("fixtures = %v", names)
	}
	var lines []string
	for _, d := range diags {
		lines = append(lines, d.String())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"b-bad.yaml:2:12: error FIX001",
		"c-dup.json:1:10: error FMT004",
		"d-typo.yaml:2:1: error FMT002",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnostics do not contain %q:\n%s", want, got)
		}
	}
}
