package certify

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/signing"
)

func outcomes(r *Report) map[string]Check {
	m := map[string]Check{}
	for _, c := range r.Checks {
		m[c.Name] = c
	}
	return m
}

// TestExampleConnectorIsCertifiedAndSigned: a Strict example passes every
// check (its fixtures replayed under GOMAXPROCS 1 and 4, shuffled), and
// the signed report and SBOM verify.
func TestExampleConnectorIsCertifiedAndSigned(t *testing.T) {
	priv, pub, err := signing.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := signing.LoadSigner(priv, nil)
	out := t.TempDir()
	var progress []string
	r, err := Run(context.Background(), "../examples/connectors/normalize", Options{
		Out: out, Signer: signer, Tool: "flowgen-test",
		Now:      func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) },
		Progress: func(i, n int, c Check, done bool) { progress = append(progress, c.Name) },
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

// TestEveryExampleConnectorIsCertified: no check fails for any connector
// under examples (normalize is covered, signed, above). Warnings are
// allowed: they name fixtures worth adding.
func TestEveryExampleConnectorIsCertified(t *testing.T) {
	specs, _ := filepath.Glob("../examples/connectors/*/connector.yaml")
	if len(specs) < 5 {
		t.Fatalf("found %d example connectors", len(specs))
	}
	for _, spec := range specs {
		dir := filepath.Dir(spec)
		if filepath.Base(dir) == "normalize" {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			r, err := Run(context.Background(), dir, Options{FixtureDatabase: pgtest.DatabaseURL()})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if c.Outcome == Fail {
					t.Errorf("%s failed: %s\n%s", c.Name, c.Summary, strings.Join(c.Evidence, "\n"))
				}
			}
			if r.ArtifactDigest == "" {
				t.Error("no artifact digest in the report")
			}
		})
	}
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
	if !v.OK() || len(v.Verified) != 3 {
		t.Fatalf("Verify: verified %v, problems %v", v.Verified, v.Problems)
	}
	pubPath := filepath.Join(t.TempDir(), "pub.pem")
	os.WriteFile(pubPath, pub, 0o644)
	cosign := testutil.CosignPath(t)
	for _, f := range []string{ArtifactFile, SBOMFile, ReportFile} {
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

// TestBrokenConnectorsFailTheRightCheck: each deliberately broken
// connector under testdata fails the check about its defect, with
// evidence that names it.
func TestBrokenConnectorsFailTheRightCheck(t *testing.T) {
	for _, tc := range []struct {
		dir, check, evidence string
		onlyFailure          bool
	}{
		{"testdata/strictclock", "static-analysis", "connector.go:10:14: clock: calls time.Now: reads the clock", true},
		{"testdata/readonlywrite", "static-analysis", "connector.go:14:18: write: calls os.WriteFile: changes the file system", true},
		{"testdata/maporder", "static-analysis", "connector.go:9:2: maporder: ranging over a map", true},
		{"testdata/noidemkey", "spec", "error DAG004: effectful connector broken.no_key has no idempotency key", true},
		{"testdata/doublecharge", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
		// Only the replay in another process sees a header that follows
		// the wall clock through the context's deadline.
		{"testdata/schedheader", "determinism", `request 1: header X-Client-Deadline was`, true},
		// It has no success fixture, so duplicate delivery cannot run either.
		{"testdata/doubleretry", "fixtures", "the connector repeated its last request 1 time(s) by itself, but its spec makes the retry owner orchestrator", false},
		// The host is refused at run time too, so the fixture fails with it.
		{"testdata/badhost", "egress", `records a request to evil.example, which is not in egress [api.good.example]`, false},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			r, err := Run(context.Background(), tc.dir, Options{Out: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if r.Passed() {
				t.Fatal("certified")
			}
			c := outcomes(r)[tc.check]
			if c.Outcome != Fail || !strings.Contains(strings.Join(c.Evidence, "\n"), tc.evidence) {
				t.Errorf("%s: %+v", tc.check, c)
			}
			if tc.onlyFailure {
				for _, other := range r.Checks {
					if other.Name != tc.check && other.Outcome == Fail {
						t.Errorf("%s failed too: %s", other.Name, other.Summary)
					}
				}
			}
		})
	}
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
		want = append(want, strings.TrimSpace(c.name+" "+gate))
	}
	for i := range rows {
		rows[i] = strings.TrimSpace(rows[i])
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/certification.md lists\n%s\nthe code runs\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
