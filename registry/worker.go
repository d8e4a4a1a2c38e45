package registry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify"
)

// WorkerCommand is the subcommand that makes a binary a certification
// worker (registryd certify-worker); a binary that embeds the registry
// dispatches it to [WorkerMain].
const WorkerCommand = "certify-worker"

// WorkerRequest is what registryd sends a certification worker on stdin.
type WorkerRequest struct {
	// Dir is the extracted connector; Out is where the worker writes the
	// artifact, manifest, SBOM and report, unsigned.
	Dir             string    `json:"dir"`
	Out             string    `json:"out"`
	Module          string    `json:"module"`
	FixtureDatabase string    `json:"fixture_database,omitempty"`
	Now             time.Time `json:"now"`
	// MaxFixtures and SandboxBudget bound what the certification may
	// cost (certify.Options; zero for certify's defaults).
	MaxFixtures   int           `json:"max_fixtures,omitempty"`
	SandboxBudget time.Duration `json:"sandbox_budget,omitempty"`
}

// workerProgress is one line the worker prints on stdout as a check ends.
type workerProgress struct {
	Index   int               `json:"index"`
	Total   int               `json:"total"`
	Check   certify.CheckName `json:"check"`
	Outcome string            `json:"outcome"`
}

// WorkerMain is the certification worker: it reads a WorkerRequest from
// stdin, certifies the connector (its code runs only in the sandbox; a
// worker never runs it unsandboxed), writes the unsigned result to
// Request.Out, and prints one progress line per check on stdout. It exits
// 0 when certification ran, whatever its outcome, and 1 when it could not.
//
// The worker is a process of its own so that the one that certifies never
// holds the signing key: registryd starts it with an environment that has
// only what the go command needs, and signs what it wrote only after
// checking the report.
func WorkerMain(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	var req WorkerRequest
	dec := json.NewDecoder(io.LimitReader(stdin, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintf(stderr, "certify-worker: request: %v\n", err)
		return 1
	}
	now := func() time.Time { return time.Now() }
	if !req.Now.IsZero() {
		now = func() time.Time { return req.Now }
	}
	_, err := certify.Run(ctx, req.Dir, certify.Options{
		Out: req.Out, Module: req.Module, Tool: "registryd", FixtureDatabase: req.FixtureDatabase,
		SignedBy: "registryd", Now: now, MaxFixtures: req.MaxFixtures, SandboxBudget: req.SandboxBudget,
		Progress: func(i, n int, c certify.Check, done bool) {
			if done {
				line, _ := json.Marshal(workerProgress{Index: i, Total: n, Check: c.Name, Outcome: string(c.Outcome)})
				fmt.Fprintf(stdout, "%s\n", line)
			}
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "certify-worker: %v\n", err)
		return 1
	}
	return 0
}

// workerEnv is the worker's whole environment: what the go command needs
// to find itself and its caches, nothing else. Tokens, database URLs,
// cloud credentials and the key's password stay in registryd.
func workerEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME", "GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE",
		"GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOFLAGS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// runWorker certifies dir in a worker process, which writes its report to
// req.Out, telling progress each line it prints.
func (s *Server) runWorker(ctx context.Context, req WorkerRequest, progress func(workerProgress)) error {
	if len(s.cfg.Worker) == 0 {
		return errors.New("no certification worker is configured")
	}
	in, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, s.cfg.Worker[0], append(s.cfg.Worker[1:], WorkerCommand)...)
	cmd.Env = workerEnv()
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the certification worker: %w", err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var p workerProgress
		if json.Unmarshal(sc.Bytes(), &p) == nil {
			progress(p)
		}
	}
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("certification worker: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
