package certify

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	if c := outcomes(r)["determinism"]; !strings.Contains(c.Summary, "-cpu=1,4") {
		t.Errorf("determinism did not replay under GOMAXPROCS 1 and 4: %+v", c)
	}
	if len(progress) != 2*len(checkNames) {
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
	if !strings.Contains(string(report), `"manifest_digest": "`+r.ManifestDigest+`"`) {
		t.Errorf("report does not carry the digest:\n%s", report)
	}
}

// TestBrokenConnectorsFailTheRightCheck: each deliberately broken
// connector under testdata fails the check about its defect, with
// evidence that names it.
func TestBrokenConnectorsFailTheRightCheck(t *testing.T) {
	for _, tc := range []struct {
		dir, check, evidence string
		onlyFailure          bool
	}{
		{"testdata/strictclock", "static-analysis", "connector.go:10:6: clock: time.Now", true},
		{"testdata/readonlywrite", "static-analysis", "connector.go:14:6: write: os.WriteFile writes to the file system, but the connector is declared ReadOnly", true},
		{"testdata/maporder", "static-analysis", "connector.go:9:2: maporder: ranging over a map", true},
		{"testdata/noidemkey", "spec", "error DAG004: effectful connector broken.no_key has no idempotency key", true},
		{"testdata/doublecharge", "duplicate-delivery", "(fixture charged) saw 8 effects at the provider", true},
		{"testdata/doubleretry", "fixtures", "the connector repeated its last request 1 time(s) by itself, but its spec makes the retry owner orchestrator", true},
		// The host is refused at run time too, so the fixture fails with it.
		{"testdata/badhost", "egress", `requests evil.example, which is not in egress [api.good.example]`, false},
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
