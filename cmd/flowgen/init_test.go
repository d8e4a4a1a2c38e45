package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitScaffoldsAConnectorAuthorsCanBuild walks the author's path in a
// module of its own that declares flowgen in its tool block: init, go vet,
// go test (red: "not implemented"), write Run, go generate, go test (green).
func TestInitScaffoldsAConnectorAuthorsCanBuild(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	gomod := "module example.com/conn\n\ngo 1.26\n\nrequire github.com/flowgen-dev/flowgen v0.0.0\n\n" +
		"replace github.com/flowgen-dev/flowgen => " + repo + "\n\ntool github.com/flowgen-dev/flowgen/cmd/flowgen\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) (string, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		// Everything comes from the module cache this repository's own
		// build filled: no network.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	goCmd("mod", "tidy", "-e") // -e: tests of dependencies need modules we never build

	dir := filepath.Join(mod, "capturefee")
	r := run(t, "", "init", "connector", "payments.capture_fee", "--dir", dir)
	if r.exit != exitOK {
		t.Fatalf("init: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	for _, f := range []string{"connector.yaml", "doc.go", "connector.go", "fixtures/another-id.yaml", "node_gen.go", "types_gen.go", "fixtures_gen_test.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("init did not write %s", f)
		}
	}
	if out, err := goCmd("vet", "./..."); err != nil {
		t.Fatalf("go vet on the scaffold: %v\n%s", err, out)
	}
	out, err := goCmd("test", "./...")
	if err == nil || !strings.Contains(out, "payments.capture_fee is not implemented yet: write Run in connector.go") {
		t.Fatalf("the stub's fixture test should fail saying what to do: %v\n%s", err, out)
	}

	impl := strings.Replace(mustRead(t, filepath.Join(dir, "connector.go")),
		`return Output{}, runtime.Errorf(runtime.Permanent, "payments.capture_fee is not implemented yet: write Run in connector.go")`,
		`_ = runtime.Permanent
	return Output{ID: in.ID}, nil`, 1)
	if err := os.WriteFile(filepath.Join(dir, "connector.go"), []byte(impl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := goCmd("generate", "./..."); err != nil || !strings.Contains(out, "0 files written, 3 unchanged") {
		t.Fatalf("go generate through the tool block: %v\n%s", err, out)
	}
	if out, err := goCmd("test", "-v", "./..."); err != nil || !strings.Contains(out, "--- PASS: TestFixtures/another-id") {
		t.Fatalf("go test after writing Run (both fixtures should pass): %v\n%s", err, out)
	}

	if r := run(t, "", "init", "connector", "payments.capture_fee", "--dir", dir); r.exit != exitUsage || !strings.Contains(r.stderr, "already exists; nothing written") {
		t.Errorf("init over an existing package: exit %d %s", r.exit, r.stderr)
	}
	if r := run(t, "", "init", "connector", "Payments"); r.exit != exitUsage || !strings.Contains(r.stderr, "is not a connector id") {
		t.Errorf("bad id: exit %d %s", r.exit, r.stderr)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
