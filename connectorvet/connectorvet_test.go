package connectorvet_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/flowgen-dev/flowgen/connectorvet"
)

// TestRules checks every rule against the want comments under testdata:
// what must be reported, what must not (sums over maps, selects with a
// default, reads, generated files, accepted findings), and a clean package.
func TestRules(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), connectorvet.Analyzer, "bad", "readonly", "clean")
}

// TestVetToolOnTheExamples builds flowgen-vet and runs it through go vet
// over the whole module, whose connector packages (the examples) must be
// clean and whose other packages it skips, and over a copy of a
// connector given a clock read, which must not.
func TestVetToolOnTheExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a vet tool with the go command")
	}
	tool := filepath.Join(t.TempDir(), "flowgen-vet")
	if out, err := exec.Command("go", "build", "-o", tool, "../cmd/flowgen-vet").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if out, err := exec.Command("go", "vet", "-vettool="+tool, "../...").CombinedOutput(); err != nil {
		t.Fatalf("the examples are not clean: %v\n%s", err, out)
	}
	src, err := os.ReadFile("../examples/connectors/normalize/connector.go")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(src), "\tindex := map[string]int{}", "\t_ = time.Now()\n\tindex := map[string]int{}", 1)
	edited = strings.Replace(edited, "import (\n", "import (\n\t\"time\"\n", 1)
	abs, _ := filepath.Abs("../examples/connectors/normalize/connector.go")
	repl := filepath.Join(t.TempDir(), "connector.go")
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	os.WriteFile(repl, []byte(edited), 0o644)
	os.WriteFile(overlay, []byte(`{"Replace": {"`+abs+`": "`+repl+`"}}`), 0o644)
	out, err := exec.Command("go", "vet", "-overlay", overlay, "-vettool="+tool, "../examples/connectors/normalize").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "connector.go:") || !strings.Contains(string(out), "clock: time.Now") {
		t.Fatalf("a clock read was not reported with its position: %v\n%s", err, out)
	}
}
