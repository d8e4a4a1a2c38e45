package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
)

// TestConnectorInAuthorModule follows a connector author who keeps the
// connector as a package of their own module and uses flowgen from a
// checkout (a replace directive, as docs/codegen.md says): flowgen
// certify passes locally and registryd certifies the upload the same;
// a connector importing another package of the module is refused by
// package and certify alike, with the fix. Then a platform team pulls the
// connector and runs the go get line flowgen pull prints, in a fresh
// module with an empty module cache and no replace directive, and builds
// a program that imports it with the stock go command.
func TestConnectorInAuthorModule(t *testing.T) {
	t.Parallel()
	repo, _ := filepath.Abs("../..")
	bin := buildBinaries(t, repo)
	// Third-party modules come from this machine's module cache, offered
	// as a proxy, so the test needs no network; flowgen and the connector
	// come from the registry.
	upstream := "file://" + filepath.ToSlash(filepath.Join(goEnvValue(t, "GOMODCACHE"), "cache", "download"))
	baseEnv := append(os.Environ(), "GOPROXY="+upstream, "GOWORK=off", "GOFLAGS=")

	run := func(dir string, env []string, name string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
	must := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		out, code := run(dir, env, name, args...)
		if code != 0 {
			t.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, out)
		}
		return out
	}
	flowgen := filepath.Join(bin, "flowgen")

	// The author's module, using flowgen from the checkout.
	author := t.TempDir()
	must(author, baseEnv, "go", "mod", "init", "example.com/acme")
	must(author, baseEnv, "go", "mod", "edit", "-require=github.com/flowgen-dev/flowgen@v0.0.0-00010101000000-000000000000",
		"-replace=github.com/flowgen-dev/flowgen="+repo, "-tool=github.com/flowgen-dev/flowgen/cmd/flowgen")
	testutil.CopyFile(t, filepath.Join(repo, "go.sum"), filepath.Join(author, "go.sum"))
	// go get, not go mod tidy: tidy also wants the test dependencies of
	// every dependency, which this offline proxy need not hold.
	must(author, baseEnv, "go", "get", "-tool", "github.com/flowgen-dev/flowgen/cmd/flowgen")
	must(author, baseEnv, "go", "tool", "flowgen", "init", "connector", "acme.greet", "--dir", "connectors/greet", "--provider", "acme")
	greet := filepath.Join(author, "connectors", "greet")
	spec, _ := os.ReadFile(filepath.Join(greet, "connector.yaml"))
	spec = []byte(strings.Replace(string(spec), "summary: TODO one line saying what acme.greet does.", "summary: Echo the id back.", 1))
	os.WriteFile(filepath.Join(greet, "connector.yaml"), spec, 0o644)
	os.WriteFile(filepath.Join(greet, "connector.go"), []byte(`package greet

// Connector is acme.greet.
type Connector struct{}

// Run echoes the id.
func (c *Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	return Output{ID: in.ID}, nil
}
`), 0o644)
	must(author, baseEnv, "go", "generate", "./...")
	must(author, baseEnv, "go", "test", "./...")
	if out := must(author, baseEnv, flowgen, "certify", "connectors/greet"); !strings.Contains(out, "acme.greet 0.1.0: certified") {
		t.Fatalf("local certify:\n%s", out)
	}

	// Importing another package of the module: refused before anything is
	// built, with the fix, by package and certify alike.
	os.MkdirAll(filepath.Join(author, "internal", "text"), 0o755)
	os.WriteFile(filepath.Join(author, "internal", "text", "text.go"), []byte("package text\n\n// Same returns s.\nfunc Same(s string) string { return s }\n"), 0o644)
	stranded := filepath.Join(author, "connectors", "stranded")
	testutil.CopyDir(t, greet, stranded)
	os.WriteFile(filepath.Join(stranded, "connector.go"), []byte(`package greet

import "example.com/acme/internal/text"

// Connector is acme.greet.
type Connector struct{}

// Run echoes the id.
func (c *Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	return Output{ID: text.Same(in.ID)}, nil
}
`), 0o644)
	for _, cmd := range []string{"package", "certify"} {
		out, code := run(author, baseEnv, flowgen, cmd, "connectors/stranded")
		if code != 1 || !strings.Contains(out, "example.com/acme/internal/text") || !strings.Contains(out, "fix: move that code into the connector package") {
			t.Errorf("%s of a connector importing its module's packages: exit %d\n%s", cmd, code, out)
		}
	}

	// The registry judges the upload as flowgen certify did.
	e := &e2e{t: t, repo: repo, bin: bin, dataDir: t.TempDir()}
	e.addr = freeAddr(t)
	e.url = "https://" + e.addr
	e.cert, e.key, e.client = selfSigned(t)
	e.storage = []string{"--data-dir", e.dataDir}
	admin := e.tokenCreate("--name", "ci", "--scope", "admin")
	e.start()
	t.Cleanup(func() {
		e.proc.Process.Signal(syscall.SIGTERM)
		e.proc.Wait()
		if t.Failed() {
			t.Logf("registryd log (tail):\n%s", tail(e.logs.String(), 40))
		}
	})
	out, errOut, code := e.flowgen(admin, "publish", greet)
	if code != 0 || !strings.Contains(out, "acme/acme.greet@0.1.0 certified") {
		t.Fatalf("publish: exit %d\n%s%s", code, out, errOut)
	}

	// A platform team pulls it and runs the printed line in a fresh
	// module with an empty module cache.
	pulled := t.TempDir()
	cmd := exec.Command(flowgen, "pull", "--key", filepath.Join(e.dataDir, "registry.pub"), "--dir", pulled, "acme/acme.greet@0.1.0")
	cmd.Env = append(baseEnv, "FLOWGEN_REGISTRY="+e.url, "FLOWGEN_REGISTRY_TOKEN="+admin, "SSL_CERT_FILE="+e.cert)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pull: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	line := strings.TrimSpace(stdout.String())
	if !strings.Contains(line, "GONOSUMDB=flowgen.dev/connectors/acme/greet,github.com/flowgen-dev/flowgen") ||
		!strings.HasSuffix(line, "go get flowgen.dev/connectors/acme/greet@v0.1.0") || !strings.Contains(stderr.String(), "placed github.com/flowgen-dev/flowgen@") {
		t.Fatalf("pull printed:\n%s\n%s", line, stderr.String())
	}
	consumer := t.TempDir()
	freshEnv := append(baseEnv, "GOMODCACHE="+t.TempDir())
	must(consumer, freshEnv, "go", "mod", "init", "example.com/consumer")
	// The checksums of third-party modules, as sum.golang.org would give
	// them; flowgen's and the connector's come from what was fetched.
	testutil.CopyFile(t, filepath.Join(repo, "go.sum"), filepath.Join(consumer, "go.sum"))
	os.WriteFile(filepath.Join(consumer, "main.go"), []byte(`package main

import (
	"fmt"

	"flowgen.dev/connectors/acme/greet"
)

func main() { fmt.Println(greet.ID, greet.Version, greet.Info().ID) }
`), 0o644)
	must(consumer, freshEnv, "sh", "-c", line)
	gomod, _ := os.ReadFile(filepath.Join(consumer, "go.mod"))
	if strings.Contains(string(gomod), "replace") {
		t.Fatalf("go.mod has a replace directive:\n%s", gomod)
	}
	must(consumer, freshEnv, "go", "build", "-o", "prog", ".")
	if out := must(consumer, freshEnv, "./prog"); strings.TrimSpace(out) != "acme.greet 0.1.0 acme.greet" {
		t.Fatalf("the program printed %q", out)
	}
}

func goEnvValue(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
