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
	"sync"
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
		m[string(c.Name)] = c
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

// corpus lists the adversarial connectors under testdata that must be
// refused: each is a realistic way to cheat or to get it wrong, and must
// fail check with evidence containing evidence. With only set, no other
// check may fail.
var corpus = []struct {
	dir, check, evidence string
	only                 bool
}{
	// The spec gate.
	{"noidemkey", "spec", "error DAG004: effectful connector broken.no_key has no idempotency key", true},
	{"wrongkind", "spec", "error FIX002: fixture \"throttled\" expects Permanent, but the error answer that decides it is status 429", true},
	{"unclassified", "spec", `error DATA101: property "email" has no x-data-class`, true},
	// What cannot become a confined module.
	{"execproc", "build", "connector.go:4:2: github.com/flowgen-dev/flowgen/certify/testdata/execproc imports os/exec: a confined connector starts no processes", true},
	// What the module tried and the host refused, however it was reached.
	{"fileread", "confinement", "file during an activation: open /etc/hostname", true},
	{"readonlywrite", "confinement", "file during an activation: open for writing /tmp/flowgen-readonly-write", true},
	{"dnslookup", "confinement", "file during an activation: open /etc/hosts", true},
	{"httpclient", "confinement", "file during an activation: open /etc/hosts", true},
	{"runtimebypass", "confinement", "file during an activation: open /etc/hosts", true},
	{"grantsbypass", "confinement", "file during an activation: lstat /etc", true},
	{"waivenet", "confinement", "file during an activation: open /etc/hosts", true},
	{"methodoverride", "confinement", "capability during an activation: a read of https://api.crm.example/customers/c-1 asks, in header X-HTTP-Method-Override, to be DELETE", false},
	// What only running it shows.
	{"doubleretry", "fixtures", "the connector repeated its last request 1 time(s) by itself, but its spec makes the retry owner orchestrator", false},
	{"methodoverride", "fixtures", "a read may not ask to be another method", false},
	{"firstkey", "fixtures", `fixture "echo": output differs from the fixture`, true},
	{"doublecharge", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"attemptkey", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"blobattempt", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"kvappend", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"defaultoff", "duplicate-delivery", "with other key fields and default params (key", true},
	{"collidingkey", "duplicate-delivery", "fixture paid with other key fields (key", true},
	{"collidingkey", "duplicate-delivery", "delivered once, it took no effect", true},
	{"noeffect", "duplicate-delivery", "fixture paid (key", true},
	{"piileak", "data-classes", "a pii.email value from input /email appears in output /greeting, classified public", true},
	{"piierror", "data-classes", "the pii.email value from input /email appears in the error message", true},
	{"secretleak", "data-classes", "the value of secret crm/api-key appears in output /greeting", true},
	{"secretlog", "data-classes", "the secret value from secret crm/api-key was written to stderr (as it is) (logs)", true},
	{"badhost", "egress", "records a request to evil.example:443, which is not in egress [api.good.example]", false},
	// What only an unrecognisable world, inputs from the schemas, every
	// attempt, a lost answer, a live provider or a full search shows.
	{"recognizer", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", false},
	{"enumeffect", "duplicate-delivery", "generated: fixture shipped with input speed = express (enum)", true},
	{"comboeffect", "duplicate-delivery", "generated: fixture shipped with input express = true and gift = true", true},
	{"retrynewkey", "duplicate-delivery", "when the provider's answer to the first effect was lost and the input delivered again, but one delivery has 1", true},
	{"secondlost", "duplicate-delivery", "when the provider's answer to effect 2 of a delivery was lost and the input delivered again, but one delivery has 2", true},
	{"lateattempt", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"twopercall", "duplicate-delivery", "it took 2 effects, but the spec declares at most 1 per call", true},
	{"overridepost", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", false},
	{"readmodifywrite", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"sharedkey", "duplicate-delivery", "fixture first item and fixture second item have different inputs but one key", true},
	{"notifyeffect", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"computednotify", "duplicate-delivery", "effect(s) under duplicate deliveries, but one delivery has 1", true},
	{"secretshuffle", "data-classes", "the value of secret crm/api-key changes what the connector writes to its logs", true},
	{"chunkleak", "data-classes", "the value of secret pay/key changes requests to hosts other than [api.pay.example]", true},
	{"authleak", "data-classes", "every request answered 401: the secret value from secret notify/token appears in the error message", true},
	{"lateleak", "data-classes", "the secret value from secret crm/api-key was written to stderr (hex-encoded) (logs)", true},
	{"numberleak", "data-classes", "a financial.account value from input /account appears in output /check, classified public", true},
	{"base64secret", "data-classes", "the secret value from secret crm/api-key was written to stderr (base64-encoded) (logs)", true},
	{"countbomb", "duplicate-delivery", "an input with key fields drawn anew", true},
	{"keycount", "duplicate-delivery", "an input with key fields drawn anew", true},
	{"datebomb", "duplicate-delivery", "effect(s), but one delivery", true},
	{"dupheader", "duplicate-delivery", "names its dedupe value ambiguously: it sends its Idempotency-Key header on 2 lines", true},
	{"dupbodyfield", "duplicate-delivery", "names its dedupe value ambiguously: its body names the idempotency_key field more than once", true},
	{"shortkey", "duplicate-delivery", "a write to api.pay.example:443/charges is deduplicated on its Idempotency-Key header, a 6-character value that carries neither the activation's key nor its key fields", true},
}

// goodControls are legitimate connectors that must certify: a provider
// that deduplicates on a body field (Square) and a token whose prefix the
// connector checks, sorted map keys, an effect that an enum value turns
// off (a preview), a read before an idempotent write (a provider that
// remembers it), a library whose initializer reads crypto/rand, an
// output stamped with the activation's time (run at a drawn one), two
// fixtures posting to one URL, a KV record, a waiver, the order id as the
// Idempotency-Key, the key in UUID form for a provider that wants one.
var goodControls = []string{"goodorderkey", "goodtwofixtures", "goodkv", "goodwaiver", "goodbodyfield", "goodsortedkeys", "gooddryrun", "goodreadthenput", "gooduuid", "goodtimestamp", "gooduuidkey"}

// contained lists connectors of the corpus that depend on the host or
// reach for it natively, but that confinement makes harmless: in their
// module the clock is the activation's logical time, the environment is
// empty, the host's name, processors and sockets are the module's own,
// scheduling and map order follow the activation. They certify, and
// static analysis's finding stays in the report as a warning, for the
// author and for pull policies (evidence "" expects no finding).
var contained = []struct{ dir, evidence string }{
	{"strictclock", "connector.go:10:14: clock: calls time.Now"},
	{"clockvalue", "connector.go:13:9: clock: calls time.Now"},
	{"subpkgclock", "stamp/stamp.go:7:35: clock: calls time.Now"},
	{"depclock", "timeutil/timeutil.go:8:38: clock: calls time.Now"},
	{"fakegenerated", "zz_helpers_gen.go:8:16: env: calls os.Getenv"},
	{"initenv", "connector.go:10:22: env: calls os.Getenv"},
	{"hostname", "host: calls os.Hostname"},
	{"rawsocket", "net: calls net.Dial"},
	{"globalstate", "global: Run writes package variable calls"},
	{"goroutine", "goroutine: a goroutine makes the order"},
	{"maporder", "connector.go:9:2: maporder: ranging over a map"},
	{"linkname", "syscall: calls github.com/flowgen-dev/flowgen/certify/testdata/linkname.nanotime, which has no body"},
	{"excludedfile", "excluded: prod.go is not part of the certified build"},
	{"cgofile", "cgo: native.go uses cgo"},
	{"schedheader", ""},
}

// TestCorpus: every adversarial connector fails the check about its
// defect, with evidence that names it; and the good ones certify, one of
// them with a waiver that the report records.
func TestCorpus(t *testing.T) {
	reports := map[string]*Report{}
	var mu sync.Mutex
	t.Run("certify", func(t *testing.T) {
		dirs := slices.Clone(goodControls)
		for _, c := range corpus {
			if !slices.Contains(dirs, c.dir) {
				dirs = append(dirs, c.dir)
			}
		}
		for _, c := range contained {
			dirs = append(dirs, c.dir)
		}
		for _, dir := range dirs {
			t.Run(dir, func(t *testing.T) {
				t.Parallel()
				r, err := Run(context.Background(), filepath.Join("testdata", dir), Options{FixtureDatabase: pgtest.DatabaseURL()})
				if err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				reports[dir] = r
				mu.Unlock()
			})
		}
	})
	for _, c := range corpus {
		r := reports[c.dir]
		if r == nil {
			t.Fatalf("%s: not certified", c.dir)
		}
		if r.Passed() {
			t.Errorf("%s: certified", c.dir)
			continue
		}
		ch := outcomes(r)[c.check]
		if ch.Outcome != Fail || !strings.Contains(strings.Join(ch.Evidence, "\n"), c.evidence) {
			t.Errorf("%s: %s is %s, want a failure naming %q:\n%s", c.dir, c.check, ch.Outcome, c.evidence, strings.Join(ch.Evidence, "\n"))
		}
		if c.only {
			for _, other := range r.Checks {
				if string(other.Name) != c.check && other.Outcome == Fail {
					t.Errorf("%s: %s failed too: %s", c.dir, other.Name, other.Summary)
				}
			}
		}
	}
	// datebomb's Switch: until a month before it, only the later logical
	// times can see the bomb; after, it goes off in every world.
	if time.Now().Before(time.Date(2027, time.January, 10, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -31)) {
		if ch := outcomes(reports["datebomb"])["duplicate-delivery"]; !strings.Contains(strings.Join(ch.Evidence, "\n"), "(a connector whose keys or effects change with the date)") {
			t.Errorf("datebomb: its date bomb is not named:\n%s", strings.Join(ch.Evidence, "\n"))
		}
	}
	for _, c := range contained {
		r := reports[c.dir]
		if r == nil {
			t.Fatalf("%s: not certified", c.dir)
		}
		for _, ch := range r.Checks {
			if ch.Outcome == Fail {
				t.Errorf("%s: %s failed, though confinement contains it: %s\n%s", c.dir, ch.Name, ch.Summary, strings.Join(ch.Evidence, "\n"))
			}
		}
		sa := outcomes(r)["static-analysis"]
		if c.evidence != "" && (sa.Outcome != Warn || !strings.Contains(strings.Join(sa.Evidence, "\n"), c.evidence)) {
			t.Errorf("%s: static-analysis is %s, want a warning naming %q:\n%s", c.dir, sa.Outcome, c.evidence, strings.Join(sa.Evidence, "\n"))
		}
	}
	for _, good := range goodControls {
		for _, ch := range reports[good].Checks {
			if ch.Outcome == Fail {
				t.Errorf("%s: %s failed: %s\n%s", good, ch.Name, ch.Summary, strings.Join(ch.Evidence, "\n"))
			}
		}
	}
	w := reports["goodwaiver"].Waivers
	if len(w) != 1 || !w[0].Used || w[0].Rule != "rand" || w[0].File != "connector.go" || !strings.Contains(w[0].Reason, "random nonce") {
		t.Errorf("the waiver is not in the report as evidence: %+v", w)
	}
	if w := reports["gooduuid"].Waivers; len(w) != 1 || !w[0].Used || w[0].Package != "github.com/google/uuid" {
		t.Errorf("a waiver of a dependency's finding: %+v", w)
	}
	if ch := outcomes(reports["goodwaiver"])["static-analysis"]; ch.Outcome != Warn || !strings.Contains(strings.Join(ch.Evidence, "\n"), "waived at connector.go:15") {
		t.Errorf("the waived finding is not evidence: %+v", ch)
	}
	if n := len(corpus) + len(contained); n < 40 {
		t.Errorf("the corpus has %d cases", n)
	}
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
