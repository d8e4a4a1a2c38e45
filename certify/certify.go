// Package certify runs the certification checks on a connector package and
// produces a report: each named check with pass, warn or fail, the evidence
// behind it and how long it took, as canonical JSON. `flowgen certify` runs
// it locally; the registry runs it, unchanged, on publish.
//
// Checks, in order: spec (validation and generator diagnostics), generated
// (checked-in code matches the spec), artifact (the connector packs into a
// deterministic Go module zip; its digest identifies what was certified),
// static-analysis (connectorvet), fixtures (the spec's fixtures through the
// node, recorded HTTP replayed), duplicate-delivery (effectful connectors:
// each input delivered 2-10 times, one effect per idempotency key),
// determinism (Strict and Stable connectors: fixtures repeated under
// GOMAXPROCS 1 and 4 in shuffled order), egress (every recorded request goes
// to an allowlisted host), contract-coverage (network connectors have
// success, auth, rate-limit, server-error and timeout fixtures), sbom (SPDX 2.3,
// validated) and signature (artifact, SBOM and report signed).
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
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/connectorvet"
	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/internal/strictyaml"
	flowrt "github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/fixturetest"
	"github.com/flowgen-dev/flowgen/sbom"
	"github.com/flowgen-dev/flowgen/signing"
)

// Outcome is a check's verdict.
type Outcome string

// The outcomes.
const (
	Pass Outcome = "pass"
	Warn Outcome = "warn"
	Fail Outcome = "fail"
)

// Check is one named check's result.
type Check struct {
	Name       string   `json:"name"`
	Outcome    Outcome  `json:"outcome"`
	Summary    string   `json:"summary"`
	Evidence   []string `json:"evidence,omitempty"`
	DurationMS int64    `json:"duration_ms"`
}

// Report is a certification run.
type Report struct {
	Connector string `json:"connector"`
	Version   string `json:"version"`
	// ManifestDigest is the sha256 of the connector's manifest (the spec
	// with its schemas bundled).
	ManifestDigest string `json:"manifest_digest"`
	// Module, ModuleVersion and ArtifactDigest identify the artifact that
	// was certified (package artifact); empty when it could not be built.
	Module         string `json:"module,omitempty"`
	ModuleVersion  string `json:"module_version,omitempty"`
	ArtifactDigest string `json:"artifact_digest,omitempty"`
	// ReplayHash summarizes the determinism replay: the sha256 over every
	// fixture's replay hash, the same in every run (Strict and Stable
	// connectors only).
	ReplayHash string            `json:"replay_hash,omitempty"`
	Checks     []Check           `json:"checks"`
	Tools      map[string]string `json:"tools"`
	Started    time.Time         `json:"started"`
	Finished   time.Time         `json:"finished"`
}

// Check returns the named check, or nil when it is not in the report.
func (r *Report) Check(name string) *Check {
	for i := range r.Checks {
		if r.Checks[i].Name == name {
			return &r.Checks[i]
		}
	}
	return nil
}

// CheckNames lists the checks a run performs, in order.
func CheckNames() []string { return slices.Clone(checkNames) }

// Passed reports whether no check failed.
func (r *Report) Passed() bool {
	for _, c := range r.Checks {
		if c.Outcome == Fail {
			return false
		}
	}
	return true
}

// Options steer a run.
type Options struct {
	// Out is where sbom.spdx.json, report.json and their signatures go.
	Out string
	// Signer signs the SBOM and the report; without it the signature
	// check warns.
	Signer *signing.Signer
	// Progress is told when each check starts (done false) and ends.
	Progress func(index, total int, c Check, done bool)
	// Now is the clock recorded in the report and SBOM.
	Now func() time.Time
	// Tool names this flowgen in the report and SBOM.
	Tool string
	// Module is passed to artifact.Build.
	Module string
}

// The files a run with Out writes (each with FILE.sig when signed).
const (
	ArtifactFile         = "artifact.zip"
	ArtifactManifestFile = "artifact.json"
	SBOMFile             = "sbom.spdx.json"
	ReportFile           = "report.json"
)

// checkNames lists the checks in the order they run.
var checkNames = []string{"spec", "generated", "artifact", "static-analysis", "fixtures", "duplicate-delivery", "determinism", "egress", "contract-coverage", "sbom", "signature"}

// Run certifies the connector package in dir.
func Run(ctx context.Context, dir string, opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Tool == "" {
		opts.Tool = "flowgen"
	}
	specPath := filepath.Join(dir, "connector.yaml")
	spec, diags := connectorspec.Load(specPath)
	if spec == nil {
		return nil, fmt.Errorf("certify: %s: %v", specPath, diags.Err())
	}
	manifest, err := gen.Manifest(spec)
	if err != nil {
		manifest, _ = json.Marshal(spec) // the spec check reports why
	}
	sum := sha256.Sum256(manifest)
	r := &Report{
		Connector: spec.ID, Version: spec.Version, ManifestDigest: hex.EncodeToString(sum[:]),
		Tools:   map[string]string{"flowgen": opts.Tool, "go": runtime.Version()},
		Started: opts.Now().UTC(),
	}
	c := &run{ctx: ctx, dir: dir, spec: spec, specDiags: diags, opts: opts, report: r}
	for i, name := range checkNames {
		ch := Check{Name: name}
		if opts.Progress != nil {
			opts.Progress(i+1, len(checkNames), ch, false)
		}
		start := time.Now()
		c.do(&ch)
		ch.DurationMS = time.Since(start).Milliseconds()
		r.Checks = append(r.Checks, ch)
		if opts.Progress != nil {
			opts.Progress(i+1, len(checkNames), ch, true)
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
	specFailed bool
	ctx        context.Context
	dir        string
	spec       *connectorspec.Spec
	specDiags  diag.List
	opts       Options
	report     *Report
	sbomPath   string
}

// needsValidSpec are the checks that build or run the connector, which a
// spec with errors cannot support.
var needsValidSpec = map[string]bool{"generated": true, "artifact": true, "static-analysis": true, "fixtures": true, "duplicate-delivery": true, "determinism": true, "sbom": true}

func (c *run) do(ch *Check) {
	if c.specFailed && needsValidSpec[ch.Name] {
		ch.Outcome, ch.Summary = Warn, "skipped: the spec has errors (see spec)"
		return
	}
	switch ch.Name {
	case "spec":
		c.specCheck(ch)
		c.specFailed = ch.Outcome == Fail
	case "generated":
		c.generated(ch)
	case "artifact":
		c.packageArtifact(ch)
	case "static-analysis":
		c.analysis(ch)
	case "fixtures":
		c.goTest(ch, "TestFixtures", "-count=1")
	case "duplicate-delivery":
		if c.spec.Effects != flowtype.Effectful {
			ch.Outcome, ch.Summary = Pass, fmt.Sprintf("not required: the connector is %s", c.spec.Effects)
			return
		}
		c.goTest(ch, "TestDuplicateDelivery", "-count=1", "-v")
	case "determinism":
		if c.spec.Determinism > flowtype.Stable {
			ch.Outcome, ch.Summary = Pass, fmt.Sprintf("not required: the connector declares %s", c.spec.Determinism)
			return
		}
		c.determinism(ch)
	case "egress":
		c.egress(ch)
	case "contract-coverage":
		c.contract(ch)
	case "sbom":
		c.sbom(ch)
	case "signature":
		if c.opts.Signer == nil {
			ch.Outcome, ch.Summary = Warn, "no signing key given: the artifact, SBOM and report are unsigned"
			return
		}
		ch.Outcome, ch.Summary = Pass, "the artifact, the SBOM and the report are signed (artifact.zip.sig, sbom.spdx.json.sig, report.json.sig)"
	}
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
	if len(stale) > 0 {
		ch.Outcome, ch.Summary = Fail, "generated code does not match the spec; run go generate"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d generated files match the spec", len(files))
}

func (c *run) analysis(ch *Check) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: c.dir, Context: c.ctx}, ".")
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		ch.Outcome, ch.Summary = Fail, "the package does not load"
		if err != nil {
			ch.Evidence = append(ch.Evidence, err.Error())
		}
		for _, p := range pkgs {
			for _, e := range p.Errors {
				ch.Evidence = append(ch.Evidence, e.Error())
			}
		}
		return
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{connectorvet.Analyzer}, pkgs, nil)
	if err != nil {
		ch.Outcome, ch.Summary = Fail, err.Error()
		return
	}
	for act := range graph.All() {
		if !act.IsRoot {
			continue
		}
		for _, d := range act.Diagnostics {
			p := act.Package.Fset.Position(d.Pos)
			abs, _ := filepath.Abs(c.dir)
			rel, err := filepath.Rel(abs, p.Filename)
			if err != nil {
				rel = p.Filename
			}
			ch.Evidence = append(ch.Evidence, fmt.Sprintf("%s:%d:%d: %s", filepath.ToSlash(rel), p.Line, p.Column, d.Message))
		}
	}
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Fail, fmt.Sprintf("%d findings in the connector's code", len(ch.Evidence))
		return
	}
	ch.Outcome, ch.Summary = Pass, "no nondeterminism or capability bypass found"
}

// goTest runs one of the package's generated fixture tests with flags.
// goTest runs one generated test of the connector package and returns its
// output; ok is false (and ch failed, with the output's tail as evidence)
// when it fails.
func (c *run) goTest(ch *Check, test string, flags ...string) (out string, ok bool) {
	if len(c.spec.Fixtures) == 0 {
		ch.Outcome, ch.Summary = Fail, "the spec has no fixtures"
		return "", false
	}
	args := append([]string{"test", "-run", "^" + test + "$"}, flags...)
	args = append(args, ".")
	cmd := exec.CommandContext(c.ctx, "go", args...)
	cmd.Dir = c.dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		ch.Outcome, ch.Summary = Fail, fmt.Sprintf("go %s failed", strings.Join(args, " "))
		ch.Evidence = tail(string(b), 20)
		return string(b), false
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d fixtures pass (go %s)", len(c.spec.Fixtures), strings.Join(args, " "))
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "deliveries of") {
			ch.Summary = strings.TrimSpace(line[strings.Index(line, ": ")+2:]) + ", one effect per idempotency key"
		}
	}
	return string(b), true
}

// determinism replays the fixtures three times under GOMAXPROCS 1 and 4 in
// shuffled order and compares each fixture's replay hash across the runs
// (fixturetest.ReplayHashMarker): byte-identical results for Strict,
// canonical-JSON-identical for Stable.
func (c *run) determinism(ch *Check) {
	const runs = 3 * 2 // -count=3 × -cpu=1,4
	out, ok := c.goTest(ch, "TestFixtures", "-count=3", "-cpu=1,4", "-shuffle=on", "-v")
	if !ok {
		return
	}
	hashes := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+2 < len(f); i++ {
			if f[i] == fixturetest.ReplayHashMarker {
				hashes[f[i+1]] = append(hashes[f[i+1]], f[i+2])
			}
		}
	}
	what := "byte-identical"
	if c.spec.Determinism != flowtype.Strict {
		what = "canonically equal"
	}
	combined := sha256.New()
	var diverged []string
	for _, name := range slices.Sorted(maps.Keys(hashes)) {
		hs := hashes[name]
		distinct := slices.Compact(slices.Sorted(slices.Values(hs)))
		if len(distinct) > 1 || len(hs) != runs {
			diverged = append(diverged, fmt.Sprintf("fixture %q: %d replay hashes in %d runs: %s", name, len(distinct), len(hs), strings.Join(distinct, ", ")))
			continue
		}
		fmt.Fprintf(combined, "%s %s\n", name, distinct[0])
		ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q: %s", name, distinct[0]))
	}
	if len(hashes) != len(c.spec.Fixtures) {
		diverged = append(diverged, fmt.Sprintf("%d of %d fixtures logged a replay hash", len(hashes), len(c.spec.Fixtures)))
	}
	if len(diverged) > 0 {
		ch.Outcome, ch.Summary = Fail, "a fixture's requests or result changed between runs (want "+what+")"
		ch.Evidence = diverged
		return
	}
	c.report.ReplayHash = fmt.Sprintf("sha256:%x", combined.Sum(nil))
	ch.Evidence = append(ch.Evidence, "pins: "+fixturetest.Pins)
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d fixtures replay %s in %d runs (go test -count=3 -cpu=1,4 -shuffle=on); replay hash %s",
		len(hashes), what, runs, c.report.ReplayHash)
}

func tail(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func (c *run) egress(ch *Check) {
	hosts := map[string]bool{}
	for _, fx := range c.spec.Fixtures {
		for _, ex := range fx.HTTP {
			u, err := url.Parse(ex.Request.URL)
			if err != nil {
				ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q: bad URL %q", fx.Name, ex.Request.URL))
				continue
			}
			hosts[u.Host] = true
			if !flowrt.HostAllowed(c.spec.Egress, u.Host) {
				ch.Evidence = append(ch.Evidence, fmt.Sprintf("fixture %q requests %s, which is not in egress %v", fx.Name, u.Host, c.spec.Egress))
			}
		}
	}
	if len(ch.Evidence) > 0 {
		ch.Outcome, ch.Summary = Fail, "a recorded request leaves the egress allowlist"
		return
	}
	if len(hosts) == 0 {
		ch.Outcome, ch.Summary = Pass, "no recorded requests"
		return
	}
	ch.Outcome, ch.Summary = Pass, fmt.Sprintf("%d recorded hosts, all allowlisted: %s", len(hosts), strings.Join(slices.Sorted(maps.Keys(hosts)), ", "))
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
	doc, err := sbom.Generate(c.dir, sbom.Options{Name: c.spec.ID, Version: c.spec.Version, Digest: strings.TrimPrefix(c.report.ArtifactDigest, "sha256:"), Created: c.report.Started, Tool: c.opts.Tool})
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

// CanonicalJSON renders the report with sorted keys, the form that is
// signed.
func (r *Report) CanonicalJSON() ([]byte, error) {
	return strictyaml.SortedJSON(r)
}
