package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestExamplesAreGenerated is the drift check CI relies on: the generated
// files checked in under examples/ are what flowgen gen produces now.
func TestExamplesAreGenerated(t *testing.T) {
	t.Parallel()
	r := run(t, "", "gen", "--check", "../../examples")
	if r.exit != exitOK {
		t.Fatalf("exit %d: examples are out of date (run go generate ./...):\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "27 generated files up to date") {
		t.Errorf("summary: %q", r.stderr)
	}
}

func TestGenWritesChecksAndRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.CopyDir(t, "../../examples/connectors", dir)
	// The same import paths as in the repository, so the output is the same.
	gomod := "module github.com/flowgen-dev/flowgen/examples/connectors\n\ngo 1.26\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "refund", "node_gen.go")
	if err := os.Remove(node); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "charge", "types_gen.go"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := run(t, "", "gen", "--check", dir)
	if r.exit != exitProblems || !strings.Contains(r.stdout, "out of date: "+filepath.ToSlash(node)) ||
		!strings.Contains(r.stdout, "charge/types_gen.go") || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("--check: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(node); !os.IsNotExist(err) {
		t.Fatal("--check wrote a file")
	}

	r = run(t, "", "gen", dir)
	if r.exit != exitOK || strings.Count(r.stdout, "wrote ") != 2 || !strings.Contains(r.stderr, "8 connectors, 0 flows, 2 files written, 23 unchanged") {
		t.Fatalf("gen: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if r := run(t, "", "gen", "--check", dir); r.exit != exitOK {
		t.Fatalf("--check after gen: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}

	// A spec that loses its fixtures loses its generated fixture test.
	refundSpec := filepath.Join(dir, "refund", "connector.yaml")
	data, _ := os.ReadFile(refundSpec)
	cut := strings.Index(string(data), "\nfixtures:")
	os.WriteFile(refundSpec, data[:cut+1], 0o644)
	handWritten := filepath.Join(dir, "normalize", "fixtures_gen_test.go")
	if r := run(t, "", "gen", "--check", dir); r.exit != exitProblems || !strings.Contains(r.stdout, "refund/fixtures_gen_test.go") {
		t.Fatalf("--check after removing fixtures: exit %d\n%s", r.exit, r.stdout)
	}
	if r := run(t, "", "gen", dir); r.exit != exitOK {
		t.Fatalf("gen after removing fixtures: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "refund", "fixtures_gen_test.go")); !os.IsNotExist(err) {
		t.Error("the stale fixture test was not removed")
	}
	if _, err := os.Stat(handWritten); err != nil {
		t.Error("a fixture test that is still generated was removed")
	}

	// A spec with an error: diagnostics, and no file of any spec is touched.
	spec := filepath.Join(dir, "normalize", "connector.yaml")
	data, _ = os.ReadFile(spec)
	bad := strings.Replace(string(data), "effects: Pure", "effects: Pur", 1)
	if err := os.WriteFile(spec, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(node)
	r = run(t, "", "gen", dir)
	if r.exit != exitProblems || !strings.Contains(r.stdout, "connector.yaml:") || !strings.Contains(r.stdout, "FMT006") ||
		!strings.Contains(r.stderr, "nothing written") {
		t.Fatalf("bad spec: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if _, err := os.Stat(node); !os.IsNotExist(err) {
		t.Fatal("gen wrote files although a spec had errors")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

// TestGenReportsPortTypeMismatch: a flow whose edge joins incompatible
// ports is reported as DAG201 by gen itself, and nothing is generated.
func TestGenReportsPortTypeMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.CopyDir(t, "../../testdata/invalid/DAG201-port-type-mismatch", dir)
	r := run(t, "", "gen", dir)
	if r.exit != exitProblems || !strings.Contains(r.stdout, "error DAG201") || !strings.Contains(r.stdout, "\tfix: ") {
		t.Fatalf("exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	if gen, _ := filepath.Glob(filepath.Join(dir, "*_gen.go")); len(gen) > 0 {
		t.Errorf("gen wrote %v for a flow with errors", gen)
	}
}

// TestRunExecutesAGeneratedFlow: flowgen run compiles the flow's package
// into a throwaway program and runs one job on the embedded store.
func TestRunExecutesAGeneratedFlow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "jobs.db")
	input := filepath.Join(dir, "in.json")
	os.WriteFile(input, []byte(`{"title": "Hello Runner"}`), 0o644)

	r := run(t, "", "run", "--store", store, "--input", input, "--key", "hello-1", "../../gen/testdata/flows/inline.yaml")
	if r.exit != exitOK || !strings.Contains(r.stdout, `"state": "succeeded"`) || !strings.Contains(r.stdout, `"runes": 12`) {
		t.Fatalf("run: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	var first struct{ Job string }
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil || first.Job == "" {
		t.Fatalf("run printed no job: %v\n%s", err, r.stdout)
	}
	// The same key again starts nothing: it follows the finished job.
	r = run(t, "", "run", "--store", store, "--input", input, "--key", "hello-1", "../../gen/testdata/flows/inline.yaml")
	if r.exit != exitOK || !strings.Contains(r.stdout, first.Job) || !strings.Contains(r.stderr, `was started before under key "hello-1"`) {
		t.Fatalf("second run with the key: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}

	// A job that parks at a checkpoint returns at once with the command
	// that decides it; it stays in the store.
	r = run(t, `{"title": "Wait For Me"}`, "run", "--store", store, "--input", "-", "--timeout", "10m", "../../gen/testdata/flows/parent.yaml")
	var parked struct {
		Job     string
		State   string
		Waiting []string
	}
	if err := json.Unmarshal([]byte(r.stdout), &parked); err != nil || r.exit != 3 || parked.State != "running" || len(parked.Waiting) != 1 ||
		!strings.Contains(r.stderr, "flowgen signal --store "+store+" --approve "+parked.Job+" review") {
		t.Fatalf("parked job: exit %d %v\n%s%s", r.exit, err, r.stdout, r.stderr)
	}

	// Bad input creates no job: where the JSON breaks, every value the
	// schema refuses.
	for _, c := range []struct{ input, want string }{
		{"{\n  \"title\" \"x\"\n}", "<stdin>:2:11: $: JSON syntax: invalid character '\"' after object key"},
		{`{"title": 5, "extra": true}`, "$.title: got number, want string"},
		{``, "empty input"},
	} {
		r := run(t, c.input, "run", "--store", store, "--input", "-", "../../gen/testdata/flows/inline.yaml")
		if r.exit != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("input %q: exit %d, stderr:\n%s\nwant %q", c.input, r.exit, r.stderr, c.want)
		}
	}
	if r := run(t, "", "jobs", "--store", store); r.exit != exitOK || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("bad inputs created jobs:\n%s", r.stdout)
	}

	if r := run(t, "", "run", "--store", store, "--input", filepath.Join(dir, "missing.json"), "../../gen/testdata/flows/inline.yaml"); r.exit != exitUsage || !strings.Contains(r.stderr, "missing.json") {
		t.Errorf("missing input: exit %d %s", r.exit, r.stderr)
	}
	if r := run(t, "", "run", "../../gen/testdata/flows/inline.yaml"); r.exit != exitUsage {
		t.Errorf("no --input: exit %d", r.exit)
	}
}

// TestWorkerFinishesAJobAfterASignal: run parks a job at its checkpoint on
// PostgreSQL, signal approves it, and a flowgen worker process finishes it
// (the subflow included) and stops cleanly when interrupted.
func TestWorkerFinishesAJobAfterASignal(t *testing.T) {
	t.Parallel()
	url := pgtest.FreshSchema(t)
	r := run(t, `{"title": "Signed Off"}`, "run", "--store", url, "--input", "-", "../../gen/testdata/flows/parent.yaml")
	if r.exit != 3 || !strings.Contains(r.stdout, `"state": "running"`) {
		t.Fatalf("run: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	var started struct{ Job string }
	if err := json.Unmarshal([]byte(r.stdout), &started); err != nil || started.Job == "" {
		t.Fatalf("run output: %v\n%s", err, r.stdout)
	}
	if r := run(t, "", "signal", "--store", url, "--approve", "--by", "editor", started.Job, "review"); r.exit != exitOK {
		t.Fatalf("signal: exit %d %s", r.exit, r.stderr)
	}

	ctx, stop := context.WithCancel(context.Background())
	var stdout, stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"worker", "--store", url, "--workers", "2", "--metrics-addr", "127.0.0.1:0", "../../gen/testdata/flows/parent.yaml"}, os.Getenv, nil, &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := run(t, "", "inspect", "--store", url, "--json", started.Job)
		var in runtime.Inspection
		if json.Unmarshal([]byte(r.stdout), &in) == nil && in.Status.State == runtime.StateSucceeded {
			if !strings.Contains(r.stdout, "signed-off") {
				t.Errorf("the subflow's result is missing:\n%s", r.stdout)
			}
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("the worker did not finish the job; inspect:\n%s\nworker:\n%s", r.stdout, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The worker's metrics count what it ran.
	m := regexp.MustCompile(`worker: metrics on (http://\S+/metrics)\n`).FindStringSubmatch(stderr.String())
	if m == nil {
		stop()
		t.Fatalf("the worker does not say where its metrics are:\n%s", stderr.String())
	}
	resp, err := http.Get(m[1])
	if err != nil {
		stop()
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^flowgen_activations_finished_total\{flow="demo\.parent",kind="",node="\w+",outcome="succeeded"\} [1-9]`).Match(scraped) ||
		!strings.Contains(string(scraped), `flowgen_queue_pending_messages{stream="flowgen.work"}`) {
		t.Errorf("GET %s, its flowgen_activations and flowgen_queue lines:\n%s", m[1],
			strings.Join(regexp.MustCompile(`(?m)^flowgen_(activations|queue)_.*$`).FindAllString(string(scraped), -1), "\n"))
	}
	stop()
	if code := <-done; code != exitOK || !strings.Contains(stderr.String(), "worker: stopped") {
		t.Errorf("worker exit %d:\n%s", code, stderr.String())
	}
	// The worker says which flow definitions it serves; the job that flowgen
	// run started went on in it because both built the same definition.
	served := regexp.MustCompile(`worker: 2 workers on \S+ for demo\.child 1\.0\.0 \([0-9a-f]{16}\), demo\.parent 1\.0\.0 \([0-9a-f]{16}\)\n`)
	if !served.MatchString(stderr.String()) {
		t.Errorf("worker does not report its flow versions:\n%s", stderr.String())
	}
}

func TestKeygenSignVerify(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FLOWGEN_KEY_PASSWORD", "pw")
	if r := run(t, "", "keygen", "--out", dir); r.exit != exitOK {
		t.Fatalf("keygen: %+v", r)
	}
	if info, err := os.Stat(filepath.Join(dir, "flowgen.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode: %v %v", info, err)
	}
	if r := run(t, "", "keygen", "--out", dir); r.exit != exitUsage || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("keygen over existing keys: %+v", r)
	}
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte("zip"), 0o644)
	os.WriteFile(b, []byte("{}"), 0o644)
	if r := run(t, "", "sign", "--key", filepath.Join(dir, "flowgen.key"), a); r.exit != exitOK {
		t.Fatalf("sign: %+v", r)
	}
	r := run(t, "", "verify", "--key", filepath.Join(dir, "flowgen.pub"), a, b)
	if r.exit != exitProblems || !strings.Contains(r.stdout, "OK      "+a) || !strings.Contains(r.stdout, "MISSING "+b) {
		t.Fatalf("verify: %+v", r)
	}
	os.WriteFile(a, []byte("zap"), 0o644)
	if r := run(t, "", "verify", "--key", filepath.Join(dir, "flowgen.pub"), a); r.exit != exitProblems || !strings.Contains(r.stdout, "BAD     "+a) {
		t.Fatalf("verify tampered: %+v", r)
	}
	t.Setenv("FLOWGEN_KEY_PASSWORD", "wrong")
	if r := run(t, "", "sign", "--key", filepath.Join(dir, "flowgen.key"), b); r.exit != exitUsage {
		t.Errorf("sign with the wrong password: %+v", r)
	}
}

func TestCertifyPrintsEachCheck(t *testing.T) {
	t.Parallel()
	r := run(t, "", "certify", "--out", t.TempDir(), "../../certify/testdata/execproc")
	// build is a gate: a connector that cannot be a confined module never runs.
	if r.exit != exitProblems || !strings.Contains(r.stdout, "FAIL build") || !strings.Contains(r.stdout, "imports os/exec: a confined connector starts no processes") ||
		!strings.Contains(r.stdout, "SKIP fixtures") || !strings.Contains(r.stdout, "skipped: the build check failed") ||
		!strings.Contains(r.stdout, "NOT certified") || !strings.Contains(r.stderr, "[5/14] build") {
		t.Fatalf("certify: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
}

// TestCertifyReportsASpecWithErrors: a connector whose spec has errors
// cannot be packaged, but certify still writes a report whose spec check
// fails with the diagnostic (file:line), every other check skipped.
func TestCertifyReportsASpecWithErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.CopyDir(t, "../../certify/testdata/goodorderkey", dir)
	spec := filepath.Join(dir, "connector.yaml")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(strings.Replace(string(data), "version: 1.0.0", "version: one", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := run(t, "", "certify", "--out", out, dir)
	if r.exit != exitProblems || !strings.Contains(r.stdout, "FAIL spec") || !strings.Contains(r.stdout, "connector.yaml:4:10: error FMT006: invalid version \"one\"") ||
		!strings.Contains(r.stdout, "SKIP artifact") || !strings.Contains(r.stdout, "NOT certified") {
		t.Fatalf("certify: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || !strings.Contains(string(report), `"outcome": "fail"`) {
		t.Fatalf("no report with the failed spec check: %v\n%s", err, report)
	}
}

func TestPackageCertifyVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := run(t, "", "keygen", "--out", dir); r.exit != exitOK {
		t.Fatalf("keygen: %+v", r)
	}
	pkgOut := filepath.Join(dir, "pkg")
	r := run(t, "", "package", "--out", pkgOut, "../../examples/connectors/normalize")
	if r.exit != exitOK || !strings.Contains(r.stdout, "sha256:") {
		t.Fatalf("package: %+v", r)
	}
	digest := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]

	cert := filepath.Join(dir, "cert")
	if r := run(t, "", "certify", "--key", filepath.Join(dir, "flowgen.key"), "--out", cert, "../../examples/connectors/normalize"); r.exit != exitOK {
		t.Fatalf("certify: %+v", r)
	}
	r = run(t, "", "verify", "--key", filepath.Join(dir, "flowgen.pub"), cert)
	if r.exit != exitOK || !strings.Contains(r.stdout, "CERTIFIED") || !strings.Contains(r.stdout, digest) {
		t.Fatalf("verify CERT_DIR (want the packaged digest %s): %+v", digest, r)
	}
	os.Remove(filepath.Join(cert, "sbom.spdx.json"))
	if r := run(t, "", "verify", "--key", filepath.Join(dir, "flowgen.pub"), cert); r.exit != exitProblems || !strings.Contains(r.stdout, "sbom.spdx.json") {
		t.Fatalf("verify without the SBOM: %+v", r)
	}
	if r := run(t, "", "package", "../../certify/testdata/noidemkey"); r.exit != exitProblems || !strings.Contains(r.stderr, "connector.yaml:") {
		t.Fatalf("package of a broken spec: %+v", r)
	}
}

// TestServeOwnsTheStore runs flowgen serve on an embedded store and, while
// it runs, drives run, jobs, inspect, pause, resume, signal and kill
// against the same store: every command goes through the server.
func TestServeOwnsTheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := filepath.Join(dir, "jobs.db")
	ctx, stop := context.WithCancel(context.Background())
	var stderr testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"serve", "--store", store, "../../gen/testdata/flows/parent.yaml", "../../gen/testdata/flows/inline.yaml"}, os.Getenv, nil, io.Discard, &stderr)
	}()
	endpoint := store + ".api.json"
	waitUntil(t, "the endpoint file", func() bool { _, err := os.Stat(endpoint); return err == nil }, done, &stderr)

	r := run(t, `{"title": "Hello Server"}`, "run", "--store", store, "--input", "-", "../../gen/testdata/flows/inline.yaml")
	if r.exit != exitOK || !strings.Contains(r.stdout, `"runes": 12`) || !strings.Contains(r.stderr, "started (flowgen serve, pid") {
		t.Fatalf("run through the server: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
	}
	parkedJob := func(title string) string {
		t.Helper()
		r := run(t, `{"title": "`+title+`"}`, "run", "--store", store, "--input", "-", "../../gen/testdata/flows/parent.yaml")
		var out struct{ Job string }
		if json.Unmarshal([]byte(r.stdout), &out); r.exit != 3 || out.Job == "" {
			t.Fatalf("run to the checkpoint: exit %d\n%s%s", r.exit, r.stdout, r.stderr)
		}
		return out.Job
	}
	approved, killed := parkedJob("Approve Me"), parkedJob("Kill Me")

	if r := run(t, "", "jobs", "--store", store, "--state", "waiting"); r.exit != exitOK || !strings.Contains(r.stdout, approved) ||
		!strings.Contains(r.stdout, killed) || !strings.Contains(r.stdout, "waits at review") || strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("jobs --state waiting: %+v", r)
	}
	if r := run(t, "", "jobs", "--store", store, "--where", "title=Kill Me", "--json"); r.exit != exitOK || !strings.Contains(r.stdout, killed) || strings.Contains(r.stdout, approved) {
		t.Fatalf("jobs --where: %+v", r)
	}
	if r := run(t, "", "jobs", "--store", store, "--limit", "1"); r.exit != exitOK || !strings.Contains(r.stdout, killed) || !strings.Contains(r.stderr, "more: flowgen jobs --store "+store+" --limit 1 --after "+killed) {
		t.Fatalf("jobs --limit 1: %+v", r)
	}
	if r := run(t, "", "inspect", "--store", store, approved); r.exit != exitOK || !strings.Contains(r.stdout, "waiting for a decision:\n  review: flowgen signal --approve "+approved+" review") {
		t.Fatalf("inspect: %+v", r)
	}
	for _, cmd := range []string{"pause", "resume"} {
		if r := run(t, "", cmd, "--store", store, approved); r.exit != exitOK {
			t.Fatalf("%s: %+v", cmd, r)
		}
	}
	if r := run(t, "", "signal", "--store", store, "--approve", "--by", "editor", "--where", "title=Nobody", "review"); r.exit != exitProblems || !strings.Contains(r.stderr, "no job matching") {
		t.Fatalf("signal --where matching no job: %+v", r)
	}
	if r := run(t, "", "signal", "--store", store, "--approve", "--by", "editor", "--where", "title=Approve Me", "review"); r.exit != exitOK ||
		r.stdout != "approved at review in 1 job(s) (1 activation(s) resumed)\n" {
		t.Fatalf("signal --where: %+v", r)
	}
	if r := run(t, "", "kill", "--store", store, "--reason", "not wanted", killed); r.exit != exitOK {
		t.Fatalf("kill: %+v", r)
	}
	waitUntil(t, "the server to finish both jobs", func() bool {
		r := run(t, "", "jobs", "--store", store, "--json")
		return strings.Count(r.stdout, `"state": "succeeded"`) == 2 && strings.Count(r.stdout, `"state": "killed"`) == 1
	}, done, &stderr)
	if r := run(t, "", "inspect", "--store", store, approved); !strings.Contains(r.stdout, `nested: {"again":{"slug":"approve-me"}}`) ||
		!strings.Contains(r.stdout, "-> approved") {
		t.Errorf("the approved job's result:\n%s", r.stdout)
	}
	if r := run(t, "", "inspect", "--store", store, killed); !strings.Contains(r.stdout, "killed: not wanted") {
		t.Errorf("the killed job:\n%s", r.stdout)
	}
	// The server's metrics, in Prometheus's format, without a token.
	var ep struct{ Addr string }
	if raw, err := os.ReadFile(endpoint); err != nil || json.Unmarshal(raw, &ep) != nil {
		t.Fatalf("endpoint file: %v", err)
	}
	resp, err := http.Get("http://" + ep.Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(scraped), "# TYPE process_resident_memory_bytes gauge") {
		t.Errorf("GET /metrics: %s\n%.500s", resp.Status, scraped)
	}
	// The web console at the address serve printed lists the jobs.
	console := regexp.MustCompile(`serve: web console on (http://\S+)\n`).FindStringSubmatch(stderr.String())
	if console == nil {
		t.Fatalf("serve does not say where its console is:\n%s", stderr.String())
	}
	jar, _ := cookiejar.New(nil)
	resp, err = (&http.Client{Jar: jar}).Get(console[1])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), approved) || !strings.Contains(string(page), killed) {
		t.Errorf("the console's job list: %s\n%.2000s", resp.Status, page)
	}

	stop()
	if code := <-done; code != exitOK || !strings.Contains(stderr.String(), "serve: stopped") {
		t.Errorf("serve exit %d:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(endpoint); !os.IsNotExist(err) {
		t.Errorf("endpoint file left behind: %v", err)
	}
	// With the server gone, the same commands open the store themselves.
	if r := run(t, "", "jobs", "--store", store); r.exit != exitOK || strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("jobs without the server: %+v", r)
	}
}

// TestHeldStoreSaysWho: a store another process holds is refused with the
// way out, not a bare timeout.
func TestHeldStoreSaysWho(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "held.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := run(t, "", "jobs", "--store", path); r.exit != exitUsage || !strings.Contains(r.stderr, "in use by another process") || !strings.Contains(r.stderr, "flowgen serve") {
		t.Errorf("held store: %+v", r)
	}
}

// waitUntil polls cond for up to a minute, failing early if the command
// running in the background exits.
func waitUntil(t *testing.T, what string, cond func() bool, done <-chan int, log *testutil.SyncBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case code := <-done:
			t.Fatalf("waiting for %s: the command exited %d:\n%s", what, code, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s:\n%s", what, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
