package certify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/flowtype"
)

// build sets up the sandbox and compiles the harness into its workspace.
// A machine without a working sandbox fails here, closed.
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
	bin := ws.File("harness")
	if err := buildHarness(c.ctx, c.dir, c.importPath, bin); err != nil {
		ch.Outcome, ch.Summary = Fail, "the connector does not build"
		ch.Evidence = tail(err.Error(), 20)
		return
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	// Prove the sandbox works here before any check relies on it.
	if _, err := ws.Run(c.ctx, sandbox.Command{Program: "harness", Limits: sandbox.Limits{Wall: 30 * time.Second}}); err != nil {
		ch.Outcome, ch.Summary = Fail, "the sandbox cannot run programs on this machine, and connector code never runs outside it"
		ch.Evidence = []string{err.Error()}
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("harness for %s built; connector code runs only in the sandbox", c.importPath)
	ch.Evidence = []string{c.report.Sandbox}
	if c.report.Insecure {
		ch.Outcome = Warn
	}
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
