package certify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/signing"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

func outcomes(r *Report) map[string]Check {
	m := map[string]Check{}
	for _, c := range r.Checks {
		m[string(c.Name)] = c
	}
	return m
}

// TestExampleConnectorIsCertifiedAndSigned: a Strict example passes every
// check (its fixtures replayed under GOMAXPROCS 1 and 4, shuffled), and
// the signed report and SBOM verify.
func TestExampleConnectorIsCertifiedAndSigned(t *testing.T) {
	priv, pub, err := signer.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := signer.Load(priv, nil)
	out := t.TempDir()
	var progress []string
	r, err := Run(context.Background(), "../examples/connectors/normalize", Options{
		Out: out, Signer: signer, Tool: "flowgen-test",
		Now:      func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) },
		Progress: func(i, n int, c Check, done bool) { progress = append(progress, string(c.Name)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Outcome == Fail {
			t.Errorf("%s failed: %s %v", c.Name, c.Summary, c.Evidence)
		}
	}
	if c := outcomes(r)["determinism"]; !strings.Contains(c.Summary, "byte-identical across 3 sandboxed processes") ||
		!strings.HasPrefix(r.ReplayHash, "sha256:") || !strings.Contains(strings.Join(c.Evidence, "\n"), "pins: clock fixed at") ||
		!strings.Contains(strings.Join(c.Evidence, "\n"), "GOMAXPROCS=4") {
		t.Errorf("determinism did not replay in differing processes: %+v", c)
	}
	if r.Insecure || !strings.HasPrefix(r.Sandbox, "bubblewrap") {
		t.Errorf("the report says the code ran %q (insecure %v)", r.Sandbox, r.Insecure)
	}
	if len(progress) != 2*len(checks) {
		t.Errorf("progress calls: %v", progress)
	}
	for _, f := range []string{"report.json", "sbom.spdx.json"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := os.ReadFile(filepath.Join(out, f+".sig"))
		if err != nil {
			t.Fatal(err)
		}
		if err := signing.Verify(pub, data, sig); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	report, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if !strings.Contains(string(report), `"artifact_digest": "`+r.ArtifactDigest+`"`) || !strings.HasPrefix(r.ArtifactDigest, "sha256:") {
		t.Errorf("report does not carry the artifact digest %q:\n%s", r.ArtifactDigest, report)
	}
	verifyCertification(t, out, pub)
}

// TestCertifiesAnExtractedArtifact: what the registry does with an upload.
// The artifact of an example that refers to shared schemas outside its
// directory is extracted elsewhere, built against this checkout through a
// workspace, and certified; every check passes and the report names the
// digest of the uploaded zip.
func TestCertifiesAnExtractedArtifact(t *testing.T) {
	a, err := artifact.Build("../examples/connectors/charge", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir, err := artifact.Extract(a, root)
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("..")
	gowork := "go 1.26.0\n\nuse ./" + a.Manifest.Dir + "\n\nreplace github.com/flowgen-dev/flowgen => " + repo + "\n"
	os.WriteFile(filepath.Join(root, "go.work"), []byte(gowork), 0o644)
	r, err := Run(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Outcome == Fail {
			t.Errorf("%s failed: %s %v", c.Name, c.Summary, c.Evidence)
		}
	}
	if r.ArtifactDigest != a.Manifest.Digest {
		t.Errorf("certified %s, uploaded %s", r.ArtifactDigest, a.Manifest.Digest)
	}
}

// verifyCertification: Verify accepts what Run wrote, stock cosign verifies
// the three signatures offline, and a changed artifact or a swapped report
// is caught and named.
func verifyCertification(t *testing.T, out string, pub []byte) {
	v, err := Verify(out, pub)
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || len(v.Verified) != 4 {
		t.Fatalf("Verify: verified %v, problems %v", v.Verified, v.Problems)
	}
	pubPath := filepath.Join(t.TempDir(), "pub.pem")
	os.WriteFile(pubPath, pub, 0o644)
	cosign := testutil.CosignPath(t)
	for _, f := range []string{ArtifactFile, SBOMFile, ReportFile, ModuleFile} {
		p := filepath.Join(out, f)
		cmd := exec.Command(cosign, "verify-blob", "--key", pubPath, "--signature", p+".sig", "--insecure-ignore-tlog", p)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("cosign verify-blob %s: %v\n%s", f, err, b)
		}
	}

	zipPath := filepath.Join(out, ArtifactFile)
	orig, _ := os.ReadFile(zipPath)
	os.WriteFile(zipPath, append(bytes.Clone(orig), 0), 0o644)
	v, _ = Verify(out, pub)
	if want := []string{"artifact.zip: signature does not match", "artifact.zip is sha256:", "report.json certifies artifact"}; !containsAll(v.Problems, want) {
		t.Errorf("a changed artifact: problems %q, want each of %q", v.Problems, want)
	}
	os.WriteFile(zipPath, orig, 0o644)
	// The manifest is unsigned: a changed file list, module or spec in it
	// is caught against the signed zip and report.
	manifestPath := filepath.Join(out, ArtifactManifestFile)
	manifestOrig, _ := os.ReadFile(manifestPath)
	for name, change := range map[string]func(*artifact.Manifest){
		"files":  func(m *artifact.Manifest) { m.Files = m.Files[1:] },
		"module": func(m *artifact.Manifest) { m.Module += "x" },
		"spec":   func(m *artifact.Manifest) { m.Spec = json.RawMessage(`{"id":"other.connector"}`) },
	} {
		var m artifact.Manifest
		json.Unmarshal(manifestOrig, &m)
		change(&m)
		changed, _ := json.Marshal(m)
		os.WriteFile(manifestPath, changed, 0o644)
		if v, _ = Verify(out, pub); v.OK() || !containsAll(v.Problems, []string{"artifact.json"}) {
			t.Errorf("a manifest with other %s: problems %q", name, v.Problems)
		}
	}
	os.WriteFile(manifestPath, manifestOrig, 0o644)
	if v, _ = Verify(out, pub); !v.OK() {
		t.Fatalf("the manifest restored: %q", v.Problems)
	}
	os.Remove(filepath.Join(out, ReportFile+".sig"))
	if v, _ = Verify(out, pub); v.OK() || !containsAll(v.Problems, []string{"report.json: no signature"}) {
		t.Errorf("an unsigned report: %q", v.Problems)
	}
}

func containsAll(problems, want []string) bool {
	all := strings.Join(problems, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			return false
		}
	}
	return true
}

// TestReplaceDirectiveIsRefused: a connector that is a module of its own
// and replaces the runtime with a copy is refused before anything runs,
// when it is packaged: modules that require it ignore replace directives,
// so certification would vouch for a build nobody gets.
func TestReplaceDirectiveIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replaced")
	if err := os.CopyFS(dir, os.DirFS("testdata/goodkv")); err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("..")
	gosum, _ := os.ReadFile("../go.sum")
	os.WriteFile(filepath.Join(dir, "go.sum"), gosum, 0o644)
	// flowgen's own requirements, so that the module graph is complete.
	gomod, _ := os.ReadFile("../go.mod")
	mod := strings.Replace(string(gomod), "module github.com/flowgen-dev/flowgen", "module example.com/replaced", 1) +
		"\nrequire github.com/flowgen-dev/flowgen v0.0.0-00010101000000-000000000000\n\nreplace github.com/flowgen-dev/flowgen => " + repo + "\n"
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644)
	r, err := Run(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ch := outcomes(r)["artifact"]
	if ch.Outcome != Fail || !strings.Contains(ch.Summary, "replace github.com/flowgen-dev/flowgen: a consumer of the module would not see it") {
		t.Fatalf("artifact: %+v", ch)
	}
	if b := outcomes(r)["build"]; b.Outcome != Skip {
		t.Errorf("build ran after the gate failed: %+v", b)
	}
}

// TestUnloadableSpecGetsAReport: a spec that does not parse still gets a
// report, whose spec check fails with the diagnostic's position and
// whose other checks did not run.
func TestUnloadableSpecGetsAReport(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "connector.yaml"), []byte("apiVersion: flowgen.dev/v1\nkind: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), dir, Options{Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	spec := outcomes(r)["spec"]
	if spec.Outcome != Fail || !strings.Contains(strings.Join(spec.Evidence, "\n"), "connector.yaml:2:") {
		t.Fatalf("spec: %+v", spec)
	}
	for _, ch := range r.Checks {
		if ch.Name != "spec" && ch.Name != "signature" && ch.Outcome != Skip {
			t.Errorf("%s ran after the spec failed: %+v", ch.Name, ch)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out", ReportFile)); err != nil {
		t.Errorf("no report written: %v", err)
	}
}

// TestSandboxBudgetBoundsASpinningConnector: a connector whose Run never
// returns costs its deliveries' timeouts only until the run's sandbox
// budget is spent; every check after that fails at once, saying so.
func TestSandboxBudgetBoundsASpinningConnector(t *testing.T) {
	t.Parallel()
	r, err := Run(context.Background(), filepath.Join("testdata", "spin"), Options{SandboxBudget: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed() {
		t.Fatal("a connector that never returns certified")
	}
	budget := 0
	for _, c := range r.Checks {
		if strings.Contains(c.Summary+strings.Join(c.Evidence, "\n"), "used the run's whole sandbox budget (10s)") {
			budget++
		}
	}
	if ch := outcomes(r)["fixtures"]; ch.Outcome != Fail || budget < 2 {
		t.Fatalf("fixtures %s; %d checks name the spent budget:\n%s", ch.Outcome, budget, reportText(r))
	}
}

// TestFixtureCap: a spec with more fixtures than the cap fails the spec
// check, naming the cap.
func TestFixtureCap(t *testing.T) {
	t.Parallel()
	r, err := Run(context.Background(), filepath.Join("testdata", "spin"), Options{MaxFixtures: 3, SandboxBudget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if ch := outcomes(r)["spec"]; ch.Outcome != Fail || !strings.Contains(strings.Join(ch.Evidence, "\n"), "4 fixtures: certification runs at most 3 per connector") {
		t.Fatalf("spec: %s %v", ch.Outcome, ch.Evidence)
	}
}

// reportText is a report's checks in words, for failure messages.
func reportText(r *Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%s %s: %s\n  %s\n", c.Name, c.Outcome, c.Summary, strings.Join(c.Evidence, "\n  "))
	}
	return b.String()
}

// TestDocumentedChecks: docs/certification.md lists every check, in order,
// with its gate marked as the code has it.
func TestDocumentedChecks(t *testing.T) {
	doc, err := os.ReadFile("../docs/certification.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[2]), "`") {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSpace(cells[1])); err != nil {
			continue // another table
		}
		rows = append(rows, strings.Trim(strings.TrimSpace(cells[2]), "`")+" "+strings.TrimSpace(cells[3]))
	}
	var want []string
	for _, c := range checks {
		gate := ""
		if c.gate {
			gate = "yes"
		}
		want = append(want, strings.TrimSpace(string(c.name)+" "+gate))
	}
	for i := range rows {
		rows[i] = strings.TrimSpace(rows[i])
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/certification.md lists\n%s\nthe code runs\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckNamesAreTheChecksRun: the names package report publishes (for
// policies and pulls) are the checks this package runs, in order.
func TestCheckNamesAreTheChecksRun(t *testing.T) {
	var ran []CheckName
	for _, c := range checks {
		ran = append(ran, c.name)
	}
	if !slices.Equal(ran, CheckNames()) {
		t.Errorf("certify runs %v, report names %v", ran, CheckNames())
	}
}
