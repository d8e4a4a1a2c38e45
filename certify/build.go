package certify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/internal/golist"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/wasmbuild"
)

// The files of the sandbox workspace: the harness program, the module it
// runs, and the module's compilation cache.
const (
	harnessFile = "harness"
	moduleFile  = "module.wasm"
	cacheDir    = "wazero-cache"
)

// build sets up the sandbox, compiles the connector into its module, the
// bytes production runs, and builds the harness that runs it; then
// compiles the module once, in the sandbox, for every run to come. A
// machine without a working sandbox fails here, closed.
func (c *run) build(ch *Check) {
	sb := c.opts.Sandbox
	if sb == nil {
		var err error
		if sb, err = sandbox.New(sandbox.Options{}); err != nil {
			ch.Outcome, ch.Summary = Fail, "the sandbox is unavailable, and connector code never runs outside it"
			ch.Evidence = []string{err.Error(), "install bubblewrap and allow unprivileged user namespaces; a local run may pass --insecure-no-sandbox, which the report records"}
			return
		}
	}
	c.report.Sandbox, c.report.Insecure = sb.Describe(), !sb.Isolated()
	ws, err := sb.NewWorkspace()
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	c.ws = ws
	if c.importPath == "" {
		if c.importPath, err = importPath(c.ctx, c.dir); err != nil {
			ch.Outcome, ch.Summary = Fail, "the connector package does not load"
			ch.Evidence = tail(err.Error(), 20)
			return
		}
	}
	var caps []flowtype.Capability
	for _, r := range c.spec.Capabilities {
		caps = append(caps, r.Name)
	}
	mod, err := wasmbuild.Build(c.ctx, c.dir, caps, ws.File(moduleFile))
	if err != nil {
		ch.Outcome, ch.Summary = Fail, "the connector does not build as a confined module"
		var be *wasmbuild.Error
		if errors.As(err, &be) {
			ch.Evidence = be.Problems
		} else {
			ch.Evidence = tail(err.Error(), 20)
		}
		return
	}
	c.module = mod
	c.report.ModuleDigest = mod.Digest
	if c.opts.Out != "" {
		wasm, err := os.ReadFile(mod.Path)
		if err == nil {
			err = c.write(filepath.Join(c.opts.Out, ModuleFile), wasm)
		}
		if err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
	}
	if c.node, err = gen.Declare(c.spec); err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	if err := c.buildHarness(ws.File(harnessFile)); err != nil {
		ch.Outcome, ch.Summary = Fail, "the certification harness does not build (a flowgen installation problem)"
		ch.Evidence = tail(err.Error(), 20)
		return
	}
	if err := os.Chmod(ws.File(harnessFile), 0o755); err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	// Prove the sandbox works here before any check relies on it, then
	// compile the module where the runs will read it.
	if _, err := ws.Run(c.ctx, sandbox.Command{Program: harnessFile, Limits: sandbox.Limits{Wall: 30 * time.Second}}); err != nil {
		ch.Outcome, ch.Summary = Fail, "the sandbox cannot run programs on this machine, and connector code never runs outside it"
		ch.Evidence = []string{err.Error()}
		return
	}
	if err := c.compileModule(); err != nil {
		ch.Outcome, ch.Summary = Fail, "the module does not compile"
		ch.Evidence = tail(err.Error(), 20)
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("module %s (%d bytes) built from %s; it runs only in the wasm host, in the sandbox", mod.Digest, mod.Size, c.importPath)
	ch.Evidence = []string{c.report.Sandbox}
	if c.report.Insecure {
		ch.Outcome = Warn
	}
}

// buildHarness builds the harness program from flowgen's own source, the
// checkout or module the connector builds against, outside the
// connector's workspace: nothing of the artifact's goes into it, not even
// its choice of dependency versions.
func (c *run) buildHarness(out string) error {
	// The workspace decides which flowgen the connector builds against,
	// whatever GOWORK this process was started with.
	mods, err := golist.Packages[struct{ Dir string }](c.ctx, c.dir, []string{"GOWORK=", "GOFLAGS=-mod=readonly"}, "-m", flowgenmod.Path)
	if err != nil {
		return err
	}
	if len(mods) != 1 || mods[0].Dir == "" {
		return fmt.Errorf("the connector's workspace has no local copy of %s", flowgenmod.Path)
	}
	dir := mods[0].Dir
	cmd := exec.CommandContext(c.ctx, "go", "build", "-trimpath", "-o", out, harnessPkg+"/cmd/harness")
	cmd.Dir = dir
	cmd.Env = append(goEnv(), "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	return nil
}

// compileModule compiles the module into the workspace's compilation
// cache, in the sandbox (compiling runs none of the module), and makes
// the cache readable by every later run, each of which has a user id of
// its own.
func (c *run) compileModule() error {
	dir := c.ws.File(cacheDir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	var stderr cappedBuffer
	stderr.max = maxLog
	res, err := c.ws.Run(c.ctx, sandbox.Command{
		Program: harnessFile, Args: []string{"compile", c.ws.Path(moduleFile), c.ws.Path(cacheDir)},
		Writable: []string{cacheDir}, Stderr: &stderr, Limits: sandbox.Limits{Wall: 5 * time.Minute, FileSize: 1 << 30},
	})
	switch {
	case err != nil:
		return err
	case res.ExitCode != 0:
		return fmt.Errorf("exit status %d: %s", res.ExitCode, stderr.String())
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if d.IsDir() {
			mode = 0o555
		}
		return os.Chmod(path, mode)
	})
}

// importPath is the import path of the package in dir.
func importPath(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-f", "{{.ImportPath}}", ".")
	cmd.Dir = dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s", strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// newWorld returns a fresh world for a check, with a fixture database
// when the connector has db capabilities.
func (c *run) newWorld(now time.Time) (*recorder.World, error) {
	w := recorder.NewWorld(now, c.allowed)
	w.ReadOnly = c.spec.Effects < flowtype.Effectful
	w.Token = c.manifest.Token()
	if c.spec.Idempotency != nil {
		for _, d := range c.spec.Idempotency.ProviderDedupe {
			w.Contract = append(w.Contract, httpfixture.Dedupe{Method: d.Method, Path: d.Path, Header: d.Header, BodyField: d.BodyField})
		}
	}
	caps := map[flowtype.Capability]bool{}
	for _, r := range c.spec.Capabilities {
		caps[r.Name] = true
	}
	if caps[flowtype.DBRead] || caps[flowtype.DBWrite] {
		if c.opts.FixtureDatabase == "" {
			return nil, fmt.Errorf("the connector declares a db capability, and its fixtures need a database: pass a fixture database (flowgen certify --fixture-database postgres://...)")
		}
		db, err := recorder.OpenFixtureDB(c.ctx, c.opts.FixtureDatabase, c.manifest.DatabaseSetup(), !caps[flowtype.DBWrite])
		if err != nil {
			return nil, err
		}
		w.DB = db
	}
	c.worlds = append(c.worlds, w)
	return w, nil
}

// allowed reports whether the spec's egress allowlist admits a target
// (flowtype.TargetOf).
func (c *run) allowed(target string) bool {
	return flowtype.EgressAllows(c.spec.Egress, target)
}

// violations returns every world's violations, without repeats.
func (c *run) violations(worlds ...*recorder.World) []string {
	var out []string
	for _, w := range worlds {
		for _, v := range w.Violations() {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// goEnv is the environment of every go command certification runs on the
// artifact: no cgo (so no C toolchain runs with flags the artifact chose),
// no toolchain download the artifact could ask for, no go.mod edits, and
// the workspace found from the connector's directory (the go.work
// Workspace wrote), whatever GOWORK the caller has.
func goEnv() []string {
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CGO_ENABLED", "GOTOOLCHAIN", "GOFLAGS", "GOOS", "GOARCH", "GOWORK":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly")
}
