package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/idemkey"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

type result struct {
	exit           int
	stdout, stderr string
}

func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, os.Getenv, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// stepAll steps e until no message is ready.
func stepAll(t *testing.T, e *engine.Engine) {
	t.Helper()
	for {
		did, err := e.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !did {
			return
		}
	}
}

func TestValidateExamplesIsClean(t *testing.T) {
	t.Parallel()
	r := run(t, "", "validate", "../../examples")
	if r.exit != exitOK || r.stdout != "" {
		t.Fatalf("exit %d, stdout:\n%s", r.exit, r.stdout)
	}
	if !strings.Contains(r.stderr, "10 files checked (8 connectors, 2 flows): 0 errors, 0 warnings") {
		t.Errorf("summary: %q", r.stderr)
	}
}

// compilerLine is the text format: file:line:col: severity CODE: message,
// then a tab-indented fix line.
var compilerLine = regexp.MustCompile(`^[^:]+\.yaml:\d+:\d+: (error|warning) [A-Z]+\d+: .+$`)

func TestValidateTextFormat(t *testing.T) {
	t.Parallel()
	r := run(t, "", "validate", filepath.Join(invalidDir, "DAG201-port-type-mismatch"))
	if r.exit != exitProblems {
		t.Fatalf("exit %d, want %d", r.exit, exitProblems)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !compilerLine.MatchString(lines[0]) || !strings.HasPrefix(lines[1], "\tfix: ") {
		t.Fatalf("output:\n%s", r.stdout)
	}
	if !strings.HasSuffix(strings.SplitN(lines[0], ": error", 2)[0], "flow.yaml:10:23") {
		t.Errorf("position: %s", lines[0])
	}
}

func TestValidateJSONFormat(t *testing.T) {
	t.Parallel()
	r := run(t, "", "validate", "--format", "json", filepath.Join(invalidDir, "CACHE001-strict-without-cache"))
	if r.exit != exitOK { // a warning alone is not a failure
		t.Fatalf("exit %d: %s", r.exit, r.stderr)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	for _, k := range []string{"file", "line", "col", "severity", "code", "message", "fix"} {
		if _, ok := d[k]; !ok {
			t.Errorf("JSON diagnostic lacks %q: %s", k, r.stdout)
		}
	}
	if d["code"] != "CACHE001" || d["severity"] != "warning" || d["line"] != float64(8) {
		t.Errorf("diagnostic: %v", d)
	}
}

func TestValidateReportsEveryProblemInOneRun(t *testing.T) {
	t.Parallel()
	r := run(t, "", "validate", invalidDir)
	if r.exit != exitProblems {
		t.Fatalf("exit %d", r.exit)
	}
	codes := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m) (?:error|warning) ([A-Z]+\d+):`).FindAllStringSubmatch(r.stdout, -1) {
		codes[m[1]] = true
	}
	// Cases share connector ids, so some collide (FMT004) when validated
	// together; most codes must still come through.
	if len(codes) < 35 {
		t.Errorf("only %d distinct codes from the whole corpus: %v", len(codes), codes)
	}
}

func TestValidateUsageAndIOErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notFlowgen := filepath.Join(dir, "notes.yaml")
	if err := os.WriteFile(notFlowgen, []byte("hello: world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args     []string
		exit     int
		inStdout string
		inStderr string
	}{
		"no paths":            {[]string{"validate"}, exitUsage, "", "Usage: flowgen validate"},
		"bad format":          {[]string{"validate", "--format", "xml", "."}, exitUsage, "", "xml"},
		"missing path":        {[]string{"validate", filepath.Join(dir, "nope")}, exitUsage, "", "nope"},
		"explicit non-spec":   {[]string{"validate", notFlowgen}, exitProblems, "FMT007", ""},
		"directory of others": {[]string{"validate", dir}, exitOK, "", "0 files checked"},
		"help":                {[]string{"validate", "-h"}, exitOK, "", "Exit status"},
	} {
		t.Run(name, func(t *testing.T) {
			r := run(t, "", tc.args...)
			if r.exit != tc.exit || !strings.Contains(r.stdout, tc.inStdout) || !strings.Contains(r.stderr, tc.inStderr) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s", r.exit, tc.exit, r.stdout, r.stderr)
			}
		})
	}
}

func TestTopLevelHelpAndUnknownCommand(t *testing.T) {
	t.Parallel()
	if r := run(t, "", "help"); r.exit != exitOK || !strings.Contains(r.stdout, "validate") {
		t.Errorf("help: %+v", r)
	}
	if r := run(t, "", "help", "idemkey"); r.exit != exitOK || !strings.Contains(r.stdout, "--partition-hex") {
		t.Errorf("help idemkey: %+v", r)
	}
	if r := run(t, ""); r.exit != exitUsage {
		t.Errorf("no args: %+v", r)
	}
	if r := run(t, "", "valdate"); r.exit != exitUsage || !strings.Contains(r.stderr, `unknown command "valdate"`) {
		t.Errorf("unknown: %+v", r)
	}
}

// TestIdemkeyMatchesVectors runs every shipped vector through the command
// line, reading fields from stdin and from a file.
func TestIdemkeyMatchesVectors(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../runtime/idemkey/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	vectors, err := idemkey.ParseVectors(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			args := []string{"idemkey", "--schema", v.Schema, "--node", v.Node, "--cbor", "-"}
			if v.PartitionHex != nil {
				args = append(args, "--partition-hex", *v.PartitionHex)
			}
			r := run(t, string(v.Fields), args...)
			if v.Error != "" {
				if r.exit != exitUsage || !strings.Contains(r.stderr, v.Error) {
					t.Fatalf("want rejection with %q, got %+v", v.Error, r)
				}
				return
			}
			want := "cbor   " + v.CBORHex + "\nblake3 " + v.Key + "\n"
			if r.exit != exitOK || r.stdout != want {
				t.Fatalf("got %+v, want stdout %q", r, want)
			}
			path := filepath.Join(t.TempDir(), "fields.json")
			if err := os.WriteFile(path, v.Fields, 0o644); err != nil {
				t.Fatal(err)
			}
			// The file first, flags after it: flags may come anywhere.
			args = []string{"idemkey", path, "--schema", v.Schema, "--node", v.Node}
			if v.PartitionHex != nil {
				args = append(args, "--partition-hex", *v.PartitionHex)
			}
			if r := run(t, "", args...); r.exit != exitOK || r.stdout != v.Key+"\n" {
				t.Fatalf("file form %v: %+v", args, r)
			}
		})
	}
}

func TestIdemkeyUsageErrors(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"missing schema": {"idemkey", "--node", "n", "-"},
		"bad hex":        {"idemkey", "--schema", "s", "--node", "n", "--partition-hex", "zz", "-"},
		"two files":      {"idemkey", "--schema", "s", "--node", "n", "a.json", "b.json"},
		"not an object":  {"idemkey", "--schema", "s", "--node", "n", "-"},
	} {
		if r := run(t, "[1]", args...); r.exit != exitUsage || r.stderr == "" {
			t.Errorf("%s: %+v", name, r)
		}
	}
}

func TestSchemaCommandPrintsPublishedSchemas(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"connectorspec", "flowir"} {
		want, err := os.ReadFile("../../schemas/" + name + ".schema.json")
		if err != nil {
			t.Fatal(err)
		}
		if r := run(t, "", "schema", name); r.exit != exitOK || r.stdout != string(want) {
			t.Errorf("schema %s differs from schemas/%s.schema.json (exit %d):\n%s", name, name, r.exit,
				testutil.Diff("schemas/"+name+".schema.json", want, "flowgen schema "+name, []byte(r.stdout)))
		}
	}
	if r := run(t, "", "schema", "nope"); r.exit != exitUsage || !strings.Contains(r.stderr, "connectorspec, flowir") {
		t.Errorf("unknown format: %+v", r)
	}
}

func TestShowDescribesExamples(t *testing.T) {
	t.Parallel()
	r := run(t, "", "show", "../../examples")
	if r.exit != exitOK {
		t.Fatalf("exit %d: %s", r.exit, r.stderr)
	}
	for _, want := range []string{
		"payments.charge@2.1.0",
		"compensated by payments.refund@^1.0 (undo key charge_id)",
		"orders.fulfilment@1.0.0",
		"edge route.card -> charge.in  ExactlyOnce",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show output lacks %q", want)
		}
	}
}

// TestCanonicalJSONFlowValidates converts the example flow to canonical JSON
// and validates the JSON file: the JSON form is a first-class input.
func TestCanonicalJSONFlowValidates(t *testing.T) {
	t.Parallel()
	r := run(t, "", "canonical", "../../examples/flows/order-fulfilment.yaml")
	if r.exit != exitOK {
		t.Fatalf("canonical: %+v", r)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	connectors, err := filepath.Abs("../../examples/connectors")
	if err != nil {
		t.Fatal(err)
	}
	doc["connectors"] = []string{filepath.ToSlash(connectors)}
	data, _ := json.Marshal(doc)
	path := filepath.Join(t.TempDir(), "order-fulfilment.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, "", "validate", path); r.exit != exitOK || r.stdout != "" || !strings.Contains(r.stderr, "1 flow") {
		t.Fatalf("validate JSON flow: %+v", r)
	}
	if r := run(t, "", "canonical", filepath.Join(invalidDir, "FMT002-unknown-field", "connector.yaml")); r.exit != exitProblems || !strings.Contains(r.stdout, "FMT002") {
		t.Errorf("canonical of an invalid file: %+v", r)
	}
}

// echoStore opens a store file at path with an engine on it that has the
// flow "one", whose one node echoes its input.
func echoStore(t *testing.T, path string, opts engine.Options) (*boltstore.Store, *engine.Engine) {
	t.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo"}, func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	eng := engine.New(s, opts)
	if err := eng.Register(&runtime.Flow{Name: "one", Nodes: []*runtime.FlowNode{{Alias: "echo", Runner: echo}}}); err != nil {
		t.Fatal(err)
	}
	return s, eng
}

// TestJobCommands runs a job on a store file, then inspects, pauses,
// resumes and kills through the command line.
func TestJobCommands(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "jobs.db")
	s, eng := echoStore(t, path, engine.Options{})
	ctx := context.Background()
	done, err := eng.Start(ctx, "one", json.RawMessage(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	stepAll(t, eng)
	waiting, err := eng.Start(ctx, "one", json.RawMessage(`{"x":2}`))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	r := run(t, "", "inspect", "--store", path, done.String())
	if r.exit != exitOK || !strings.Contains(r.stdout, "job "+done.String()+" of one: succeeded\n") ||
		!regexp.MustCompile(`(?m)^  echo +succeeded +at \+\d+ms$`).MatchString(r.stdout) || !strings.Contains(r.stdout, "result:\n  echo: {\"x\":1}\n") ||
		strings.Contains(r.stdout, "ordinal") || strings.Contains(r.stdout, "stored state") {
		t.Fatalf("inspect: %+v", r)
	}
	r = run(t, "", "inspect", "--history", "--store", path, done.String())
	if r.exit != exitOK || !regexp.MustCompile(`(?m)^history \(from \S+\):\n  \+0s +started +flow one unversioned [0-9a-f]{16}\n  \+\S+ +succeeded +echo@ \(attempt 1, ran \S+\)\n  \+\S+ +finished +succeeded\n`).MatchString(r.stdout) {
		t.Fatalf("inspect --history: %+v", r)
	}
	r = run(t, "", "inspect", "--raw", "--store", path, done.String())
	if r.exit != exitOK || !strings.Contains(r.stdout, "0 open obligations") || !strings.Contains(r.stdout, `"state":"succeeded"`) ||
		!strings.Contains(r.stdout, "ordinal=1, work done, children published, closed the job, completion done") {
		t.Fatalf("inspect --raw: %+v", r)
	}
	for _, cmd := range []string{"pause", "resume", "kill"} {
		if r := run(t, "", cmd, "--store", path, waiting.String()); r.exit != exitOK {
			t.Fatalf("%s: %+v", cmd, r)
		}
	}
	if r := run(t, "", "inspect", "--json", "--store", path, waiting.String()); r.exit != exitOK || !strings.Contains(r.stdout, `"key": "tomb"`) {
		t.Fatalf("inspect after kill: %+v", r)
	}
	if r := run(t, "", "signal", "--store", path, "--approve", waiting.String(), "nope"); r.exit != exitProblems || !strings.Contains(r.stderr, "no checkpoint") {
		t.Errorf("signal without a waiting checkpoint: %+v", r)
	}
	if r := run(t, "", "signal", "--store", path, waiting.String(), "nope"); r.exit != exitUsage {
		t.Errorf("signal without a decision: %+v", r)
	}
	if r := run(t, "", "kill", "--store", path, "AAAAAAAAAAAAAAAAAAAAAA"); r.exit != exitProblems {
		t.Errorf("kill of unknown job: %+v", r)
	}
	if r := run(t, "", "inspect", "--store", path, "not-an-id"); r.exit != exitUsage {
		t.Errorf("bad id: %+v", r)
	}
	if r := run(t, "", "inspect", "--store", filepath.Join(t.TempDir(), "none.db"), done.String()); r.exit != exitUsage {
		t.Errorf("missing store: %+v", r)
	}
}

// TestMigrateAndPostgresStore drives flowgen migrate on a fresh schema and
// inspects a job kept in PostgreSQL.
func TestMigrateAndPostgresStore(t *testing.T) {
	t.Parallel()
	url := pgtest.FreshSchema(t)
	for _, step := range []struct{ args, want string }{
		{"status", "0001 init                 applied"},
		{"status", "0002 apply                applied"},
		{"status", "0003 ack_by_key           applied"},
		{"status", "0004 enqueue_reserved     applied"},
		{"status", "0005 reserve              applied"},
		{"status", "0006 acked_at             applied"},
		{"status", "0007 enqueue_done         applied"},
		{"down", "reverted 7"},
		{"status", "0007 enqueue_done         pending"},
		{"down", "reverted 6"},
		{"status", "0006 acked_at             pending"},
		{"down", "reverted 5"},
		{"down", "reverted 4"},
		{"status", "0004 enqueue_reserved     pending"},
		{"down", "reverted 3"},
		{"status", "0003 ack_by_key           pending"},
		{"status", "0002 apply                applied"},
		{"up", "applied 3\napplied 4\napplied 5\napplied 6\napplied 7"},
		{"up", "schema is up to date"},
	} {
		r := run(t, "", "migrate", step.args, "--database-url", url)
		if r.exit != exitOK || !strings.Contains(r.stdout, step.want) {
			t.Fatalf("migrate %s: %+v", step.args, r)
		}
	}
	if r := run(t, "", "migrate", "sideways", "--database-url", url); r.exit != exitUsage {
		t.Errorf("unknown action: %+v", r)
	}
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echo := runtime.Typed(runtime.NodeInfo{ID: "t.echo"}, func(ctx *runtime.Context, _ struct{}, in json.RawMessage) (json.RawMessage, error) { return in, nil })
	eng := engine.New(s, engine.Options{})
	if err := eng.Register(&runtime.Flow{Name: "one", Nodes: []*runtime.FlowNode{{Alias: "echo", Runner: echo}}}); err != nil {
		t.Fatal(err)
	}
	job, err := eng.Start(context.Background(), "one", json.RawMessage(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if r := run(t, "", "inspect", "--raw", "--store", url, job.String()); r.exit != exitOK || !strings.Contains(r.stdout, "0 open obligations") {
		t.Fatalf("inspect on postgres: %+v", r)
	}
}

// TestHelpAndVersion: help for a command shows its flags, help for an
// unknown one fails with a suggestion, and version says what runs.
func TestHelpAndVersion(t *testing.T) {
	t.Parallel()
	if r := run(t, "", "help", "jobs"); r.exit != exitOK || !strings.Contains(r.stdout, "Usage: flowgen jobs") || !strings.Contains(r.stdout, "-where value") {
		t.Errorf("help jobs: %+v", r)
	}
	if r := run(t, "", "help", "nosuch"); r.exit != exitUsage || !strings.Contains(r.stderr, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: %+v", r)
	}
	if r := run(t, "", "vaildate"); r.exit != exitUsage || !strings.Contains(r.stderr, `did you mean "validate"?`) {
		t.Errorf("a misspelt command: %+v", r)
	}
	if r := run(t, "", "version"); r.exit != exitOK || !regexp.MustCompile(`^flowgen \S+ .*go1\.\d+`).MatchString(r.stdout) {
		t.Errorf("version: %+v", r)
	}
	for _, format := range []string{"flow", "flowir", "connector", "connectorspec"} {
		if r := run(t, "", "schema", format); r.exit != exitOK || !strings.Contains(r.stdout, `"$schema"`) {
			t.Errorf("schema %s: exit %d %s", format, r.exit, r.stderr)
		}
	}
}
