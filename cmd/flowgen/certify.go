package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// fixtureDBEnv names the default fixture database.
const fixtureDBEnv = "FLOWGEN_FIXTURE_DATABASE"

const certifyUsage = `Usage: flowgen certify [--out DIR] [--key KEY] [--fixture-database URL] [--seed N] CONNECTOR_DIR

Packs the connector into its artifact, unpacks it into a workspace of its
own exactly as a registry does (so a local pass means a registry pass),
runs the certification checks there and prints
each check's outcome as it finishes, with its evidence: spec, generated,
artifact, static-analysis and build (gates: when one fails, nothing after
it runs), then fixtures, duplicate-delivery, determinism, data-classes,
egress, contract-coverage, sbom and signature. Writes DIR/artifact.zip,
DIR/report.json (canonical JSON) and DIR/sbom.spdx.json (SPDX 2.3); with
--key they are signed (FILE.sig, verifiable with flowgen verify or cosign
verify-blob). An encrypted KEY is opened with $` + passwordEnv + `.

The connector's code runs only in a sandbox (bubblewrap: Linux namespaces,
no network, an empty environment, limits), in a harness certify generates;
its own tests never run. Without a working sandbox certification fails,
unless --insecure-no-sandbox runs the code directly on this machine, which
the report records and no registry accepts. A connector with db
capabilities needs --fixture-database (default $` + fixtureDBEnv + `): a
PostgreSQL database its fixtures run in, each run as a throwaway role.

Each run draws its world at random (secret values in their provider's
shape, the keys' node name, the clock, canaries) from a seed the report
records as world.seed; --seed N repeats a run's world.

Exit status: 0 no check failed, 1 a check failed, 2 usage or I/O error.

Flags:
`

func runCertify(e *env, args []string) int {
	fs := newFlagSet(e, "certify", certifyUsage)
	out := fs.String("out", "", "where to write the report and SBOM (default CONNECTOR_DIR/certification)")
	key := fs.String("key", "", "private key to sign the report and SBOM with")
	fixtureDB := fs.String("fixture-database", e.getenv(fixtureDBEnv), "postgres:// URL of a database for db connectors' fixtures ["+fixtureDBEnv+"]")
	seed := fs.Uint64("seed", 0, "draw the world from this seed, a report's world.seed, to repeat its run (default: a random one)")
	insecure := fs.Bool("insecure-no-sandbox", false, "run the connector's code on this machine, outside any sandbox (recorded in the report)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprint(e.stderr, "flowgen certify: name one CONNECTOR_DIR\n\n")
		fs.Usage()
		return exitUsage
	}
	dir := rest[0]
	if *out == "" {
		*out = filepath.Join(dir, "certification")
	}
	opts := certify.Options{Out: *out, Tool: "flowgen", FixtureDatabase: *fixtureDB, Seed: *seed}
	if *insecure {
		opts.Sandbox, err = sandbox.New(sandbox.Options{Insecure: true})
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
			return exitUsage
		}
		fmt.Fprintln(e.stderr, "flowgen certify: --insecure-no-sandbox: the connector's code runs on this machine with your privileges")
	}
	if *key != "" {
		pem, err := os.ReadFile(*key)
		if err == nil {
			opts.Signer, err = signer.Load(pem, []byte(e.getenv(passwordEnv)))
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen certify: %s: %v\n", *key, err)
			return exitUsage
		}
	}
	opts.Progress = func(i, n int, c certify.Check, done bool) {
		if !done {
			fmt.Fprintf(e.stderr, "[%d/%d] %-18s ...\n", i, n, c.Name)
			return
		}
		fmt.Fprintf(e.stdout, "%-4s %-18s %6.1fs  %s\n", strings.ToUpper(string(c.Outcome)), c.Name, float64(c.DurationMS)/1000, c.Summary)
		for _, ev := range c.Evidence {
			fmt.Fprintf(e.stdout, "       %s\n", ev)
		}
	}
	// Judge exactly what a registry will: the artifact, unpacked into a
	// workspace of its own against the flowgen this connector builds with.
	a, err := artifact.Build(dir, artifact.Options{})
	if errors.Is(err, artifact.ErrSpecInvalid) {
		// Nothing to package, but still a report: its spec check fails
		// with every diagnostic, and nothing else runs.
		return e.certifyReport(dir, *out, opts)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitProblems
	}
	flowgenDir, _, err := flowgenmod.Used(e.ctx, dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitUsage
	}
	work, err := os.MkdirTemp("", "flowgen-certify-")
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitUsage
	}
	defer os.RemoveAll(work)
	unpacked, err := certify.Workspace(a, work, flowgenDir)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitProblems
	}
	if opts.Out, err = filepath.Abs(opts.Out); err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitUsage
	}
	return e.certifyReport(unpacked, *out, opts)
}

// certifyReport certifies dir, prints the verdict and says where the
// report is (out as given).
func (e *env) certifyReport(dir, out string, opts certify.Options) int {
	r, err := certify.Run(e.ctx, dir, opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen certify: %v\n", err)
		return exitUsage
	}
	verdict := "certified"
	if !r.Passed() {
		verdict = "NOT certified"
	}
	fmt.Fprintf(e.stdout, "%s %s: %s in %s; report %s\n", r.Connector, r.Version, verdict,
		r.Finished.Sub(r.Started).Round(100*1e6), filepath.ToSlash(filepath.Join(out, "report.json")))
	if !r.Passed() {
		return exitProblems
	}
	return exitOK
}
