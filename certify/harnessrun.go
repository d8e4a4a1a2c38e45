package certify

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/certify/recorder"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/internal/leak"
)

// harnessPkg is the package of the program that runs in the sandbox.
const harnessPkg = "github.com/flowgen-dev/flowgen/certify/harness"

// variant is how a harness process is set apart from another: the
// determinism check compares runs that differ in everything that must not
// matter.
type variant struct {
	name     string
	hostname string
	asPID1   bool
	env      []string
	// freshInstances runs each delivery in an instance of its own;
	// otherwise a process's deliveries share instances, so a later one
	// runs where earlier ones left their state.
	freshInstances bool
	// warm runs every fixture once, unjudged, before the fixtures that
	// are judged, in the same instance: what a connector keeps between
	// activations (package state, caches) then shows.
	warm bool
}

// The process variants: the fixtures run under the first; determinism
// replays under the others and compares. The host process's settings
// reach no module; they differ to show it.
var variants = []variant{
	{name: "a", hostname: "certify-a", env: []string{"GOMAXPROCS=1", "LANG=C", "FLOWGEN_RUN=a"}},
	{name: "b", hostname: "replay-b.example.internal", asPID1: true, env: []string{"GOMAXPROCS=4", "LANG=de_DE.UTF-8", "TZ=Asia/Kathmandu", "FLOWGEN_RUN=b", "HOME=/nonexistent"}, freshInstances: true},
	{name: "c", hostname: "c", env: []string{"GOMAXPROCS=2", "GODEBUG=asyncpreemptoff=1", "FLOWGEN_RUN=c-longer-value"}, warm: true},
}

// processRun is one harness process: what its session observed and what
// the process printed.
type processRun struct {
	recorder.Outcome
	Stdout, Stderr string
	Exit           sandbox.Result
	// Err is set when the sandbox could not run the process at all.
	Err error
	// Logged says, for each value watched (the world's secrets, then
	// the session's canaries), where the process's output carried it:
	// "stderr (base64-encoded)"; "" when it did not. The whole output is
	// searched, however long, though only its start is kept.
	Logged []string
}

// maxLog bounds what is kept of a harness process's output.
const maxLog = 1 << 20

// runSession runs one harness process against s in the sandbox, and
// searches its output for the world's secrets and the canaries given.
func (c *run) runSession(s *recorder.Session, v variant, canaries ...canary) processRun {
	c.sandboxMu.Lock()
	left := c.opts.SandboxBudget - c.sandboxUsed
	c.sandboxMu.Unlock()
	if left <= 0 {
		return processRun{Err: budgetSpent(c.opts.SandboxBudget)}
	}
	started := time.Now()
	defer func() {
		c.sandboxMu.Lock()
		c.sandboxUsed += time.Since(started)
		c.sandboxMu.Unlock()
	}()
	n := c.sessions.Add(1)
	ln, addr, err := c.ws.Listen(fmt.Sprintf("r%d.sock", n))
	if err != nil {
		return processRun{Err: err}
	}
	defer os.Remove(c.ws.File(fmt.Sprintf("r%d.sock", n)))
	defer ln.Close()
	s.Module = wire.Module{Path: c.ws.Path(moduleFile), Cache: c.ws.Path(cacheDir), Node: c.node, FreshInstances: v.freshInstances}
	stop := recorder.Serve(c.ctx, ln, s)
	var stdout, stderr cappedBuffer
	stdout.max, stderr.max = maxLog, maxLog
	watched := append(c.secretCanaries(), canaries...)
	looks := make([]leak.Value, len(watched))
	for i, cn := range watched {
		looks[i] = cn.look
	}
	outWatch, errWatch := leak.NewStream(looks...), leak.NewStream(looks...)
	res, err := c.ws.Run(c.ctx, sandbox.Command{
		Program: harnessFile, Args: []string{"run", addr}, Env: v.env, Hostname: v.hostname, AsPID1: v.asPID1,
		Stdout: io.MultiWriter(&stdout, outWatch), Stderr: io.MultiWriter(&stderr, errWatch),
		Limits: sandbox.Limits{Wall: min(sessionWall(s), left)},
	})
	stop()
	if err == nil && res.TimedOut && left < sessionWall(s) {
		err = budgetSpent(c.opts.SandboxBudget)
	}
	out := s.Outcome()
	c.eventsMu.Lock()
	c.events = append(c.events, out.Events...)
	c.eventsMu.Unlock()
	logged := make([]string, len(watched))
	for i := range watched {
		for _, w := range []struct {
			name  string
			found string
		}{{"stdout", outWatch.Found()[i]}, {"stderr", errWatch.Found()[i]}} {
			if w.found != "" && logged[i] == "" {
				logged[i] = w.name + " (" + w.found + ")"
			}
		}
	}
	c.traceSecrets(out, logged)
	return processRun{Outcome: out, Stdout: stdout.String(), Stderr: stderr.String(), Exit: res, Err: err, Logged: logged}
}

// traceSecrets notes where a session showed a secret, whichever check
// ran it: in the process's output (logged, in the order runSession
// watches, secrets first), an error or an output.
func (c *run) traceSecrets(out recorder.Outcome, logged []string) {
	if c.check == "data-classes" {
		return // it judges its own runs, fixture by fixture
	}
	var found []string
	for i, cn := range c.secretCanaries() {
		if logged[i] != "" {
			found = append(found, secretLogged(cn, logged[i]))
		}
		for _, res := range out.Results {
			if res.Error != nil {
				if form := cn.look.Find(res.Error.Message); form != "" {
					found = append(found, fmt.Sprintf("in the %s check, the value of secret %s appears in an error message (%s), which reaches job state and logs", c.check, cn.origin, form))
				}
			}
			if form := cn.look.Find(string(res.Output)); form != "" {
				found = append(found, fmt.Sprintf("in the %s check, the value of secret %s appears in an output (%s)", c.check, cn.origin, form))
			}
		}
	}
	c.leaksMu.Lock()
	c.secretLeaks = append(c.secretLeaks, found...)
	c.leaksMu.Unlock()
}

// secretLogged says that a secret was written to the process's output.
func secretLogged(cn canary, where string) string {
	return fmt.Sprintf("the %s value from %s was written to %s (logs)", cn.class, originName(cn), where)
}

// sessionWall bounds a harness process: the deliveries' own timeouts, in
// the order they can run, and some room to start.
func sessionWall(s *recorder.Session) time.Duration {
	var total time.Duration
	for _, d := range s.Deliveries {
		total += d.Timeout
	}
	if s.Concurrency > 1 {
		total /= time.Duration(s.Concurrency)
	}
	return total + 30*time.Second
}

// budgetSpent is the failure of a harness process that the run's sandbox
// budget stopped or never let start.
func budgetSpent(budget time.Duration) error {
	return fmt.Errorf("the connector's code has used the run's whole sandbox budget (%s): a connector that blocks or spins costs every check its deliveries' timeouts", budget)
}

// failure explains a process that did not report every result.
func (p processRun) failure() string {
	if p.Err != nil {
		return "the harness could not run: " + p.Err.Error()
	}
	msg := fmt.Sprintf("the harness process exited with status %d", p.Exit.ExitCode)
	if p.Exit.TimedOut {
		msg = "the harness process was killed at its wall-time limit"
	}
	if tail := lastLines(p.Stderr, 5); tail != "" {
		msg += ": " + tail
	}
	return msg
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}

// cappedBuffer keeps the first max bytes written and drops the rest.
type cappedBuffer struct {
	bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
