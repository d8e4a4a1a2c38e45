// Package certify runs the certification checks on a connector package and
// produces a report: each named check with pass, warn, fail or skip, the
// evidence behind it and how long it took, as canonical JSON. `flowgen
// certify` runs it locally; the registry runs it, unchanged, on publish.
//
// The author and every byte of the artifact are untrusted (see
// docs/certification.md, "Trust model"). Checks run in order, and the
// first five are gates: spec, generated, artifact, static-analysis and
// build. When a gate fails every later check is skipped, so a rejected
// connector's code never runs at all. The build gate compiles a harness
// program certify generates (never the author's tests), and every check
// that runs connector code runs that harness in the sandbox (package
// sandbox), with every capability answered by certify's recorder (package
// recorder) outside it: effects, egress and outputs are judged from what
// the recorder saw, never from the connector process's output or exit
// status.
//
// The checks: spec (validation and generator diagnostics), generated
// (checked-in code matches the spec), artifact (the deterministic module
// zip whose digest identifies what was certified), static-analysis,
// build (the harness compiles, the sandbox is available), fixtures (every
// fixture through the node, strict recorded HTTP), duplicate-delivery
// (Effectful connectors: bursts, concurrent, late, skewed and retried
// deliveries of fixture inputs, default params and inputs with other key
// fields; one effect per idempotency key and never none), determinism
// (Strict and Stable connectors: the fixtures replayed in processes that
// differ in host name, PID, environment and scheduling), data-classes
// (canary values in classified inputs and secrets must not reach weaker
// outputs, errors or logs), egress (every request the recorder saw, and
// every recorded one, goes to an allowlisted host), contract-coverage,
// sbom (SPDX 2.3, validated) and signature.
//
// [Verify] checks a certification directory written by Run: the three
// signatures and that the report, SBOM and artifact name the same digest.
package certify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/token"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/report"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/connectorvet"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/sbom"
	"github.com/flowgen-dev/flowgen/signing/signer"
	"github.com/flowgen-dev/flowgen/wasmbuild"
)

// The report's types, from the leaf package report (which pull and
// policy read without linking the certifier).
type (
	// Outcome is a check's verdict.
	Outcome = report.Outcome
	// Check is one named check's result.
	Check = report.Check
	// Report is a certification run.
	Report = report.Report
	// Waiver is one //flowgen:allow comment, as evidence.
	Waiver = report.Waiver
	// CheckName names a check.
	CheckName = report.CheckName
	// World is what a run drew at random (report.World).
	World = report.World
	// Verification is what Verify established (report.Verification).
	Verification = report.Verification
)

// The outcomes (report.Pass and the others).
const (
	Pass = report.Pass
	Warn = report.Warn
	Fail = report.Fail
	Skip = report.Skip
)

// CheckNames lists the checks a run performs, in order.
func CheckNames() []CheckName { return report.CheckNames() }

// Verify checks a certification directory against a public key
// (report.Verify).
func Verify(dir string, pub []byte) (*Verification, error) { return report.Verify(dir, pub) }

// Options steer a run.
type Options struct {
	// Out is where sbom.spdx.json, report.json and their signatures go.
	Out string
	// Signer signs the SBOM and the report; without it the signature
	// check warns, unless SignedBy names who signs them after the run.
	Signer *signer.Signer
	// SignedBy names the party that signs the output after checking the
	// report (registryd): the certifying process never holds its key.
	SignedBy string
	// Progress is told when each check starts (done false) and ends.
	Progress func(index, total int, c Check, done bool)
	// Now is the clock recorded in the report and SBOM.
	Now func() time.Time
	// Tool names this flowgen in the report and SBOM.
	Tool string
	// Module is passed to artifact.Build.
	Module string
	// Sandbox runs the connector's code. When nil, Run sets up the
	// default (bubblewrap), and fails the build gate if it cannot: it
	// never falls back to running code unsandboxed.
	Sandbox *sandbox.Sandbox
	// FixtureDatabase is a postgres:// URL of a database the fixtures of
	// db connectors run in (each run in a role and schema of its own).
	FixtureDatabase string
	// Seed draws the run's world (World); 0 draws a seed from the
	// operating system. A report's world.seed repeats its run.
	Seed uint64
	// MaxFixtures bounds the fixtures a spec may carry (default
	// DefaultMaxFixtures): the spec check fails above it.
	MaxFixtures int
	// SandboxBudget bounds the time the connector's code may run in the
	// sandbox over the whole run, every check included (default
	// DefaultSandboxBudget); a check that needs the sandbox after it is
	// spent fails, saying so.
	SandboxBudget time.Duration
}

// Defaults of Options' bounds on what one certification may cost.
const (
	DefaultMaxFixtures   = 64
	DefaultSandboxBudget = 10 * time.Minute
)

// The files a run with Out writes (each with FILE.sig when signed).
const (
	ArtifactFile         = report.ArtifactFile
	ArtifactManifestFile = report.ArtifactManifestFile
	SBOMFile             = report.SBOMFile
	ReportFile           = report.ReportFile
	ModuleFile           = report.ModuleFile
)

// checkDef is one check: its name, whether it is a gate (a failure skips
// every later check), and what it does.
type checkDef struct {
	name CheckName
	gate bool
	do   func(*run, *Check)
}

// checks lists the checks in the order they run.
var checks = []checkDef{
	{"spec", true, (*run).specCheck},
	{"generated", true, (*run).generated},
	{"artifact", true, (*run).packageArtifact},
	{"static-analysis", true, (*run).analysis},
	{"build", true, (*run).build},
	{"fixtures", false, (*run).fixtures},
	{"duplicate-delivery", false, (*run).duplicates},
	{"determinism", false, (*run).determinism},
	{"data-classes", false, (*run).dataClasses},
	{"egress", false, (*run).egress},
	{"confinement", false, (*run).confinement},
	{"contract-coverage", false, (*run).contract},
	{"sbom", false, (*run).sbom},
	{"signature", false, (*run).signature},
}

// Run certifies the connector package in dir.
func Run(ctx context.Context, dir string, opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxFixtures <= 0 {
		opts.MaxFixtures = DefaultMaxFixtures
	}
	if opts.SandboxBudget <= 0 {
		opts.SandboxBudget = DefaultSandboxBudget
	}
	if opts.Tool == "" {
		opts.Tool = "flowgen"
	}
	specPath := filepath.Join(dir, connectorspec.FileName)
	spec, diags := connectorspec.Load(specPath)
	if spec == nil {
		// A spec that does not even parse still gets a report: its spec
		// check fails with every diagnostic, and nothing else runs.
		spec = &connectorspec.Spec{File: specPath}
		if !diags.HasErrors() {
			diags.Add(diag.Pos{File: specPath}, diag.FMT001, "", "the spec does not load")
		}
	}
	manifest, err := connectorspec.Manifest(spec)
	if err != nil {
		manifest, _ = json.Marshal(spec) // the spec check reports why
	}
	sum := sha256.Sum256(manifest)
	r := &Report{
		Connector: spec.ID, Version: spec.Version, ManifestDigest: hex.EncodeToString(sum[:]),
		Tools:   map[string]string{"flowgen": opts.Tool, "go": goruntime.Version()},
		Started: opts.Now().UTC(),
	}
	c := &run{ctx: ctx, dir: dir, spec: spec, specDiags: diags, opts: opts, report: r}
	if c.manifest, err = httpfixture.Parse(manifest); err != nil {
		c.manifest = &httpfixture.Manifest{}
	}
	if opts.Seed == 0 {
		opts.Seed = drawSeed()
	}
	c.world = newDrawn(spec, c.manifest, opts.Seed, r.Started)
	r.World = &c.world.World
	defer c.close()
	for i, def := range checks {
		ch := Check{Name: def.name}
		if opts.Progress != nil {
			opts.Progress(i+1, len(checks), ch, false)
		}
		start := time.Now()
		if c.failedGate != "" && def.name != "signature" {
			ch.Outcome, ch.Summary = Skip, fmt.Sprintf("skipped: the %s check failed", c.failedGate)
		} else {
			c.check = def.name
			def.do(c, &ch)
		}
		if def.gate && ch.Outcome == Fail && c.failedGate == "" {
			c.failedGate = def.name
		}
		ch.DurationMS = time.Since(start).Milliseconds()
		r.Checks = append(r.Checks, ch)
		if opts.Progress != nil {
			opts.Progress(i+1, len(checks), ch, true)
		}
	}
	r.Finished = opts.Now().UTC()
	if opts.Out != "" {
		if err := c.writeReport(); err != nil {
			return r, err
		}
	}
	return r, nil
}

type run struct {
	ctx       context.Context
	dir       string
	spec      *connectorspec.Spec
	specDiags diag.List
	manifest  *httpfixture.Manifest
	opts      Options
	report    *Report
	world     *drawn
	// check is the check running now, and secretLeaks what any run of
	// any check showed of a secret (data-classes reports them).
	check       CheckName
	leaksMu     sync.Mutex
	secretLeaks []string
	sbomPath    string
	failedGate  CheckName
	importPath  string
	// generatedFiles are the absolute paths of files equal to what flowgen
	// gen writes for the spec.
	generatedFiles []string

	ws       *sandbox.Workspace
	sessions atomic.Int64
	// sandboxUsed is the time harness processes have run so far, against
	// Options.SandboxBudget.
	sandboxMu   sync.Mutex
	sandboxUsed time.Duration
	// module is the connector's module, built by the build gate, and node
	// its declaration from the spec, which the harness loads it with.
	module *wasmbuild.Module
	node   runtime.Declaration
	// events are what the host reported in every run (confinement).
	eventsMu sync.Mutex
	events   []wire.Event
	worlds   []*recorder.World
	// fixtureRun is the fixtures check's harness process and fixtureWorld
	// its world: determinism compares other runs with it.
	fixtureRun   processRun
	fixtureWorld *recorder.World
	// firstOutputs are what each input's first delivery returned in each
	// world of duplicate delivery, by key (firstOutput).
	firstOutputs map[*recorder.World]map[string]json.RawMessage
}

// close releases the sandbox workspace and every fixture database.
func (c *run) close() {
	if c.ws != nil {
		c.ws.Close()
	}
	for _, w := range c.worlds {
		if w.DB != nil {
			w.DB.Close()
		}
	}
}

func (c *run) signature(ch *Check) {
	if c.opts.Signer == nil && c.opts.SignedBy != "" {
		ch.Outcome, ch.Summary = Pass, fmt.Sprintf("the artifact, the SBOM and the report are signed by %s after it checks this report; certification never held the key", c.opts.SignedBy)
		return
	}
	if c.opts.Signer == nil {
		ch.Outcome, ch.Summary = Warn, "no signing key given: the artifact, SBOM and report are unsigned"
		return
	}
	ch.Outcome, ch.Summary = Pass, "the artifact, the SBOM and the report are signed (artifact.zip.sig, sbom.spdx.json.sig, report.json.sig)"
}

func (c *run) specCheck(ch *Check) {
	all := append(diag.List{}, c.specDiags...)
	if !c.specDiags.HasErrors() {
		all = append(all, gen.Check(c.spec)...)
	}
	for _, d := range all {
		ch.Evidence = append(ch.Evidence, d.String())
	}
	if placeholder := strings.Contains(c.spec.Summary, "TODO") || c.spec.Provider == "TODO"; placeholder {
		ch.Evidence = append(ch.Evidence, "summary or provider is still a TODO placeholder")
	}
	if n := len(c.spec.Fixtures); n > c.opts.MaxFixtures {
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("%d fixtures: certification runs at most %d per connector (each is delivered many times); keep the ones that cover distinct paths", n, c.opts.MaxFixtures))
	}
	switch {
	case all.HasErrors() || len(ch.Evidence) > len(all):
		ch.Outcome, ch.Summary = Fail, "the spec has errors or placeholders"
	case len(all) > 0:
		ch.Outcome, ch.Summary = Warn, fmt.Sprintf("%d warnings", len(all))
	default:
		ch.Outcome, ch.Summary = Pass, "the spec validates with no diagnostics"
	}
}

func (c *run) generated(ch *Check) {
	files, diags := gen.Connector(c.spec)
	if diags.HasErrors() {
		ch.Outcome, ch.Summary = Fail, "the generator cannot generate this spec"
		return
	}
	stale, err := gen.Changed(files)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	for _, s := range stale {
		ch.Evidence = append(ch.Evidence, "out of date: "+filepath.ToSlash(s))
	}
	// The files that equal a fresh generation are the only ones static
	// analysis lets call the runtime's internals, whatever other files'
	// headers claim.
	for _, f := range files {
		if f.Data != nil && !slices.Contains(stale, f.Path) {
			if abs, err := filepath.Abs(f.Path); err == nil {
				c.generatedFiles = append(c.generatedFiles, abs)
			}
		}
	}
	if len(stale) > 0 {
		ch.Outcome, ch.Summary = Fail, "generated code does not match the spec; run go generate"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d generated files match the spec", len(files))
}

// analysis runs connectorvet.Reach over the connector's packages and
// their dependencies: fast feedback for the author, and evidence for the
// report. It is a gate only for what would make the certified build
// differ from the one consumers get (rule trust): what the connector
// does, confinement decides and the checks that run its module judge,
// so every other finding warns, with its call path, rather than refusing
// code that the module would run contained. Waived findings and every
// waiver are evidence, and the waivers go into the report for pull
// policies to judge.
func (c *run) analysis(ch *Check) {
	res, err := connectorvet.Reach(c.ctx, connectorvet.Config{
		Dir: c.dir, Env: goEnv(), Effects: c.spec.Effects, Determinism: c.spec.Determinism, Generated: c.generatedFiles,
	})
	var le *connectorvet.LoadError
	switch {
	case errors.As(err, &le):
		ch.Outcome, ch.Summary = Fail, "the connector's packages do not load"
		ch.Evidence = le.Problems
		return
	case err != nil:
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	c.importPath = res.Root
	for _, f := range res.Findings {
		ch.Evidence = append(ch.Evidence, c.finding(f))
	}
	for _, w := range res.Waivers {
		rw := Waiver{File: c.rel(w.Pos.Filename), Line: w.Pos.Line, Rule: string(w.Rule), Package: w.Package, Reason: w.Reason, Used: w.Used, Refused: w.Refused}
		c.report.Waivers = append(c.report.Waivers, rw)
	}
	for _, f := range res.Waived {
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("waived at %s:%d (%s): %s", c.rel(f.Waiver.Pos.Filename), f.Waiver.Pos.Line, f.Waiver.Reason, c.finding(f)))
	}
	for _, w := range c.report.Waivers {
		if w.Refused != "" {
			ch.Evidence = append(ch.Evidence, fmt.Sprintf("waiver at %s:%d refused: %s", w.File, w.Line, w.Refused))
		}
	}
	scope := fmt.Sprintf("%d packages, %d reachable functions", res.Packages, res.Functions)
	gating := slices.ContainsFunc(res.Findings, func(f connectorvet.Finding) bool { return f.Rule == connectorvet.Trust })
	switch {
	case gating:
		ch.Outcome, ch.Summary = Fail, fmt.Sprintf("the certified build would not be the one consumers get; %d findings reachable from the connector's entry points (%s)", len(res.Findings), scope)
	case len(res.Findings) > 0:
		ch.Outcome, ch.Summary = Warn, fmt.Sprintf("%d findings reachable from the connector's entry points (%s); confinement contains them, and the module's runs judge what it does", len(res.Findings), scope)
	case len(res.Waived) > 0:
		ch.Outcome, ch.Summary = Warn, fmt.Sprintf("no findings but %d waived (%s)", len(res.Waived), scope)
	default:
		ch.Outcome, ch.Summary = Pass, "nothing forbidden is reachable: "+scope
	}
}

// finding renders a finding with its position and call path.
func (c *run) finding(f connectorvet.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %s (fix: %s)", c.pos(f.Pos), f.Rule, f.Message, f.Rule.Fix())
	for _, fr := range f.Path {
		fmt.Fprintf(&b, "\n    %s", fr.Func)
		if fr.Pos.IsValid() {
			fmt.Fprintf(&b, " at %s", c.pos(fr.Pos))
		}
	}
	return b.String()
}

func (c *run) pos(p token.Position) string {
	if p.Line == 0 {
		return c.rel(p.Filename)
	}
	return fmt.Sprintf("%s:%d:%d", c.rel(p.Filename), p.Line, p.Column)
}

// rel shows a file relative to the connector directory, or from its
// module path in the module cache.
func (c *run) rel(file string) string {
	abs, _ := filepath.Abs(c.dir)
	if r, err := filepath.Rel(abs, file); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	if _, after, ok := strings.Cut(filepath.ToSlash(file), "/pkg/mod/"); ok {
		return after
	}
	return filepath.ToSlash(file)
}

func tail(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// egress checks every host a fixture records and every host the recorder
// saw a request for, in every world of this run, against the allowlist.
func (c *run) egress(ch *Check) {
	hosts := map[string]bool{}
	for _, fx := range c.spec.Fixtures {
		for _, ex := range fx.HTTP {
			u, err := url.Parse(ex.Request.URL)
			if err != nil {
				ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q: bad URL %q", fx.Name, ex.Request.URL))
				continue
			}
			target := flowtype.TargetOf(u)
			hosts[target] = true
			if !c.allowed(target) {
				ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q records a request to %s, which is not in egress %v", fx.Name, target, c.spec.Egress))
			}
		}
	}
	for _, w := range c.worlds {
		for _, req := range w.Requests() {
			if req.Host == "" {
				continue
			}
			hosts[req.Host] = true
			if !c.allowed(req.Host) {
				ch.Evidence = append(ch.Evidence, fmt.Sprintf("the connector sent %s %s, to a host not in egress %v", req.Method, req.URL, c.spec.Egress))
			}
		}
	}
	slices.Sort(ch.Evidence)
	ch.Evidence = slices.Compact(ch.Evidence)
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Fail, "a request leaves the egress allowlist"
		return
	}
	if len(hosts) == 0 {
		ch.Outcome, ch.Summary = Pass, "no requests, recorded or sent"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d hosts recorded or contacted, all allowlisted: %s", len(hosts), strings.Join(slices.Sorted(maps.Keys(hosts)), ", "))
}

// confinement fails when the module, in any run, tried to reach what its
// spec does not give it: the host refused and reported each attempt (a
// file, a write through a read, an undeclared capability, an exit,
// goroutines left running after Run). Confinement contained every one;
// a connector that tries is broken or hostile either way, and in
// production the attempt would fail the same way.
func (c *run) confinement(ch *Check) {
	c.eventsMu.Lock()
	events := slices.Clone(c.events)
	c.eventsMu.Unlock()
	seen := map[string]bool{}
	for _, ev := range events {
		when := "at initialization"
		if ev.InActivation {
			when = "during an activation"
		}
		line := fmt.Sprintf("%s %s: %s", ev.Kind, when, ev.Detail)
		if !seen[line] {
			seen[line] = true
			ch.Evidence = append(ch.Evidence, line)
		}
	}
	slices.Sort(ch.Evidence)
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Fail, fmt.Sprintf("the module tried %d thing(s) its spec does not give it; the host refused each", len(ch.Evidence))
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("the module (%s) reached nothing but its declared capabilities in any run", c.report.ModuleDigest)
}

// contract checks that a network connector's fixtures show how each
// class of provider answer maps to the error taxonomy.
func (c *run) contract(ch *Check) {
	network := false
	for _, cp := range c.spec.Capabilities {
		network = network || strings.HasPrefix(string(cp.Name), "http.")
	}
	if !network {
		ch.Outcome, ch.Summary = Pass, "not required: the connector makes no HTTP calls"
		return
	}
	seen := map[string]bool{}
	for _, fx := range c.spec.Fixtures {
		switch {
		case fx.Error == nil:
			seen["success"] = true
		case fx.Error.Kind == flowtype.Auth:
			seen["auth (401/403)"] = true
		case fx.Error.Kind == flowtype.RateLimited && fx.Error.RetryAfter > 0:
			seen["rate limit with Retry-After (429)"] = true
		case fx.Error.Kind == flowtype.Transient && slices.ContainsFunc(fx.HTTP, func(ex connectorspec.Exchange) bool { return ex.Response.Timeout }):
			seen["timeout"] = true
		case fx.Error.Kind == flowtype.Transient:
			seen["server error (5xx)"] = true
		}
	}
	for _, want := range []string{"success", "auth (401/403)", "rate limit with Retry-After (429)", "server error (5xx)", "timeout"} {
		if !seen[want] {
			ch.Evidence = append(ch.Evidence, "no fixture for "+want)
		}
	}
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Warn, "some provider answers have no fixture"
		return
	}
	ch.Outcome, ch.Summary = Pass, "success, auth, rate-limit, server-error and timeout answers have fixtures"
}

// packageArtifact builds the module zip that the rest of the report is
// about and, with Out, writes it (artifact.zip, artifact.json).
func (c *run) packageArtifact(ch *Check) {
	a, err := artifact.Build(c.dir, artifact.Options{Module: c.opts.Module})
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	m := a.Manifest
	c.report.Module, c.report.ModuleVersion, c.report.ArtifactDigest = m.Module, m.Version, m.Digest
	if c.opts.Out != "" {
		mj, err := m.JSON()
		if err == nil {
			err = c.write(filepath.Join(c.opts.Out, ArtifactFile), a.Zip)
		}
		if err == nil {
			err = c.write(filepath.Join(c.opts.Out, ArtifactManifestFile), mj)
		}
		if err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("module %s@%s, %d files, %d bytes", m.Module, m.Version, len(m.Files), m.Size)
	ch.Evidence = []string{m.Digest}
}

func (c *run) sbom(ch *Check) {
	doc, err := sbom.Generate(c.dir, sbom.Options{Name: c.spec.ID, Version: c.spec.Version, Digest: strings.TrimPrefix(c.report.ArtifactDigest, "sha256:"), Created: c.report.Started, Tool: c.opts.Tool, Env: goEnv()})
	if err == nil {
		err = sbom.Validate(doc)
	}
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	if c.opts.Out != "" {
		var b bytes.Buffer
		if err := spdxjson.Write(doc, &b, spdxjson.Indent("  ")); err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
		c.sbomPath = filepath.Join(c.opts.Out, SBOMFile)
		if err := c.write(c.sbomPath, b.Bytes()); err != nil {
			ch.Outcome, ch.Summary = Fail, err.Error()
			return
		}
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("SPDX 2.3 with %d packages and %d relationships; validates", len(doc.Packages), len(doc.Relationships))
}

// write writes a file and, with a signer, its signature.
func (c *run) write(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	if c.opts.Signer == nil {
		return nil
	}
	sig, err := c.opts.Signer.Sign(data)
	if err != nil {
		return err
	}
	return os.WriteFile(path+".sig", sig, 0o644)
}

func (c *run) writeReport() error {
	data, err := c.report.CanonicalJSON()
	if err != nil {
		return err
	}
	return c.write(filepath.Join(c.opts.Out, ReportFile), data)
}
