// Command demo runs flowgen's main job end to end on embedded defaults
// (make demo): it checks the examples' generated code, starts local
// stand-ins for the order flow's external APIs, runs the order flow to
// success on the embedded store, certifies the charge connector, starts
// registryd on local disk, publishes every example connector (each
// certified as a WebAssembly module), pulls the payment connectors back
// and verifies them, runs the order flow again in a module of its own with
// them confined, and builds and runs a program that imports one with the
// stock go command through the registry's Go module proxy. It
// prints a line per stage with the time it took, stops everything it
// started, and ends with a summary table; it exits 0 only when every stage
// passed.
//
//	go run ./examples/demo            the whole demo
//	go run ./examples/demo standins   only the stand-ins, until interrupted,
//	                                  with the environment to point flowgen run at them
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/examples/standins"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	keep := fs.Bool("keep", false, "keep the work directory (it is kept anyway when a stage fails)")
	stay := fs.Bool("stay", false, "after the last check, leave the web console, the registry and the stand-ins running until interrupted (make demo KEEP=1)")
	dbURL := fs.String("database", envOr("FLOWGEN_DEMO_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL for the warehouse connector's table and db connectors' certification fixtures [FLOWGEN_DEMO_DATABASE_URL]")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: go run ./examples/demo [--keep] [--stay] [--database URL] [standins]")
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	if fs.Arg(0) == "standins" {
		os.Exit(serveStandins(ctx))
	}
	if fs.NArg() > 0 {
		fs.Usage()
		os.Exit(2)
	}
	os.Exit(runDemo(ctx, os.Stdout, *keep, *stay, *dbURL))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveStandins serves the stand-ins on 127.0.0.1 until interrupted and
// prints the environment that points the example connectors at them.
func serveStandins(ctx context.Context) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &http.Server{Handler: standins.New(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(os.Stderr, "stand-ins for %s on http://%s; in another shell:\n", strings.Join(standins.Hosts, ", "), ln.Addr())
	for _, kv := range standins.Env(ln.Addr().String()) {
		fmt.Printf("export %s\n", kv)
	}
	<-ctx.Done()
	srv.Close()
	return 0
}

// stage is one step of the demo.
type stage struct {
	name string
	run  func(d *demo, ctx context.Context) (string, error)
}

// result is how a stage went.
type result struct {
	name, outcome, detail string
	took                  time.Duration
}

func runDemo(ctx context.Context, out io.Writer, keep, stay bool, dbURL string) int {
	repo, err := repoRoot()
	if err != nil {
		fmt.Fprintln(out, "demo:", err)
		return 2
	}
	work, err := os.MkdirTemp("", "flowgen-demo-")
	if err != nil {
		fmt.Fprintln(out, "demo:", err)
		return 2
	}
	d := &demo{repo: repo, work: work, dbURL: dbURL, out: out}
	defer d.stopAll()
	stages := []stage{
		{"tools", (*demo).tools},
		{"generate", (*demo).generate},
		{"stand-ins", (*demo).startStandins},
		{"run", (*demo).runFlow},
		{"certify", (*demo).certify},
		{"registry", (*demo).startRegistry},
		{"publish", (*demo).publishAll},
		{"pull", (*demo).pull},
		{"confined", (*demo).runConfined},
		{"build", (*demo).buildConsumer},
		{"console", (*demo).console},
		{"stop", (*demo).stop},
	}
	fmt.Fprintf(out, "flowgen demo: the main job end to end on embedded defaults (work directory %s)\n", work)
	start := time.Now()
	var results []result
	failed := false
	for i, s := range stages {
		if failed && s.name != "stop" {
			results = append(results, result{name: s.name, outcome: "skipped"})
			continue
		}
		if s.name == "stop" && stay && !failed {
			d.stayUntilInterrupted(ctx)
		}
		fmt.Fprintf(out, "[%d/%d] %-10s ...\n", i+1, len(stages), s.name)
		t0 := time.Now()
		detail, err := s.run(d, ctx)
		r := result{name: s.name, outcome: "ok", detail: detail, took: time.Since(t0)}
		if err != nil {
			r.outcome, r.detail, failed = "FAILED", err.Error(), true
		}
		results = append(results, r)
		fmt.Fprintf(out, "[%d/%d] %-10s %-6s %6.1fs  %s\n", i+1, len(stages), s.name, r.outcome, r.took.Seconds(), firstLine(r.detail))
		if err != nil {
			fmt.Fprintf(out, "%s\n", indent(r.detail, "        "))
		}
	}
	fmt.Fprintln(out, "\nsummary:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STAGE\tRESULT\tTIME\tDETAIL")
	for _, r := range results {
		took := ""
		if r.outcome != "skipped" {
			took = fmt.Sprintf("%.1fs", r.took.Seconds())
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.name, r.outcome, took, firstLine(r.detail))
	}
	fmt.Fprintf(tw, "  total\t\t%.1fs\t\n", time.Since(start).Seconds())
	tw.Flush()
	if d.consoleURL != "" && !stay {
		fmt.Fprintf(out, "\nthe web console was at %s (make demo KEEP=1 leaves it running)\n", d.consoleURL)
	}
	if failed {
		fmt.Fprintf(out, "demo: FAILED; the work directory %s is kept for a look\n", work)
		return 1
	}
	if keep {
		fmt.Fprintf(out, "demo: every stage ok; the work directory %s is kept\n", work)
	} else {
		os.RemoveAll(work)
		fmt.Fprintln(out, "demo: every stage ok")
	}
	return 0
}

// stayUntilInterrupted prints where the console and the registry's
// catalogue are and waits for Ctrl-C.
func (d *demo) stayUntilInterrupted(ctx context.Context) {
	fmt.Fprintf(d.out, "\nthe demo stays up until you press Ctrl-C:\n")
	fmt.Fprintf(d.out, "  web console        %s\n", d.consoleURL)
	fmt.Fprintf(d.out, "  registry catalogue %s/ui/ (sign in with the token %s; the certificate is self-signed: %s)\n", d.regURL, d.regToken, d.regCert)
	<-ctx.Done()
	fmt.Fprintln(d.out, "interrupted: stopping")
}

// repoRoot is the flowgen checkout the demo runs from.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/flowgen-dev/flowgen\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run the demo inside a flowgen checkout (make demo)")
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
