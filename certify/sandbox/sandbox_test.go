package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// probePath is testdata/probe, built statically by TestMain.
var probePath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sandbox-probe-")
	if err != nil {
		panic(err)
	}
	probePath = filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", probePath, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build probe: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// workspace returns a workspace of sb holding the probe as "probe".
func workspace(t *testing.T, sb *Sandbox) *Workspace {
	t.Helper()
	ws, err := sb.NewWorkspace()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	data, err := os.ReadFile(probePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws.File("probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

func newSandbox(t *testing.T) *Sandbox {
	t.Helper()
	sb, err := New(Options{})
	if err != nil {
		t.Fatalf("the sandbox must be available where the tests run (.ci/run installs bubblewrap): %v", err)
	}
	return sb
}

func TestRunReportsExitStatusAndOutput(t *testing.T) {
	t.Parallel()
	ws := workspace(t, newSandbox(t))
	var stdout bytes.Buffer
	res, err := ws.Run(context.Background(), Command{Program: "probe", Args: []string{"exit"}, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || res.TimedOut || stdout.String() != "hello from the sandbox\n" {
		t.Fatalf("result %+v, stdout %q", res, stdout.String())
	}
}

// TestIsolation: inside, the program sees nothing of the host's files,
// environment, network or name, cannot write anywhere, cannot start a
// shell or a nested user namespace; the one socket it is given works.
func TestIsolation(t *testing.T) {
	ws := workspace(t, newSandbox(t))

	canary := filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(canary, []byte("canary"), 0o644); err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	var tcpConns atomic.Int32
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			tcpConns.Add(1)
			c.Close()
		}
	}()
	unix, inside, err := ws.Listen("recorder.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	got := make(chan string, 1)
	go func() {
		c, err := unix.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 2)
		c.Read(buf)
		got <- string(buf)
	}()

	t.Setenv("FLOWGEN_REGISTRY_TOKEN", "must-not-leak")
	var stdout, stderr bytes.Buffer
	res, err := ws.Run(context.Background(), Command{
		Program: "probe", Args: []string{"look", canary, tcp.Addr().String(), inside},
		Env: []string{"FLOWGEN_HARNESS=1"}, Hostname: "certify-a", Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %+v %v\n%s", res, err, stderr.String())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("probe output %q: %v", stdout.String(), err)
	}
	for _, failed := range []string{"read_canary", "dial_tcp", "dns", "write_workspace", "write_root", "exec_shell", "nested_userns", "sethostname"} {
		if out[failed] == "" {
			t.Errorf("%s succeeded inside the sandbox", failed)
		}
	}
	if out["dial_unix"] != "" {
		t.Errorf("the workspace socket was not reachable: %v", out["dial_unix"])
	}
	// bubblewrap sets PWD for the directory it starts the program in.
	if env := fmt.Sprint(out["env"]); env != "[FLOWGEN_HARNESS=1 PWD=/]" {
		t.Errorf("environment inside: %v", env)
	}
	if out["hostname"] != "certify-a" {
		t.Errorf("hostname inside: %v", out["hostname"])
	}
	var root []string
	for _, n := range out["root"].([]any) {
		root = append(root, n.(string))
	}
	if !slices.Equal(root, []string{"w"}) {
		t.Errorf("the root shows %v, want only the workspace", root)
	}
	if n := tcpConns.Load(); n != 0 {
		t.Errorf("the host's loopback listener saw %d connections", n)
	}
	select {
	case s := <-got:
		if s != "hi" {
			t.Errorf("unix socket read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("the unix socket saw nothing")
	}
}

// TestLimits: memory, threads, CPU and wall time are bounded.
func TestLimits(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	for _, tc := range []struct {
		name   string
		limits Limits
		// ok checks the result; stdout is the probe's report, if any.
		ok func(res Result, stdout string) bool
	}{
		{"memory", Limits{Memory: 512 << 20}, func(r Result, out string) bool { return r.ExitCode != 0 && out == "" }},
		{"threads", Limits{Processes: 32}, func(r Result, out string) bool { return r.ExitCode != 0 && out == "" }},
		{"spin", Limits{CPU: time.Second}, func(r Result, _ string) bool { return r.ExitCode > 128 && !r.TimedOut }},
		{"sleep", Limits{Wall: time.Second}, func(r Result, _ string) bool { return r.TimedOut }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := workspace(t, sb)
			var stdout, stderr bytes.Buffer
			res, err := ws.Run(context.Background(), Command{Program: "probe", Args: []string{tc.name}, Limits: tc.limits, Stdout: &stdout, Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok(res, stdout.String()) {
				t.Fatalf("not contained: %+v\nstdout %s\nstderr %.400s", res, stdout.String(), stderr.String())
			}
		})
	}
}

// TestFailsClosed: without bubblewrap, or when it cannot make the
// namespaces, nothing runs and the error says the sandbox is unavailable.
func TestFailsClosed(t *testing.T) {
	empty := t.TempDir()
	// A run's own uid must reach the tools it executes.
	for d := empty; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", empty)
	if _, err := New(Options{}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "bubblewrap") {
		t.Fatalf("New without bwrap: %v", err)
	}

	// A bwrap that cannot create namespaces (as with user namespaces
	// disabled) says so on stderr and never reports a child.
	fake := filepath.Join(empty, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	prlimit, err := exec.LookPath("/usr/bin/prlimit")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(prlimit, filepath.Join(empty, "prlimit")); err != nil {
		t.Fatal(err)
	}
	sb, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace(t, sb)
	_, err = ws.Run(context.Background(), Command{Program: "probe", Args: []string{"exit"}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "No permissions") {
		t.Fatalf("run with a failing bwrap: %v", err)
	}
}

// TestInsecureRunsOnTheHost: the opt-out still clears the environment and
// bounds wall time, and says what it is.
func TestInsecureRunsOnTheHost(t *testing.T) {
	t.Parallel()
	sb, err := New(Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Isolated() || !strings.Contains(sb.Describe(), "insecure") {
		t.Fatalf("insecure sandbox describes itself as %q", sb.Describe())
	}
	ws := workspace(t, sb)
	var stdout bytes.Buffer
	res, err := ws.Run(context.Background(), Command{Program: "probe", Args: []string{"exit"}, Stdout: &stdout})
	if err != nil || res.ExitCode != 7 || stdout.String() != "hello from the sandbox\n" {
		t.Fatalf("%+v %v %q", res, err, stdout.String())
	}
	res, err = ws.Run(context.Background(), Command{Program: "probe", Args: []string{"sleep"}, Limits: Limits{Wall: 500 * time.Millisecond}})
	if err != nil || !res.TimedOut {
		t.Fatalf("wall time: %+v %v", res, err)
	}
}

// TestMaskedHidesWhatItShould: a masked command sees the host but not the
// hidden key or data directory, sees the directory kept inside it, has
// no view of its parent's process, and can still sandbox programs itself.
func TestMaskedHidesWhatItShould(t *testing.T) {
	sb := newSandbox(t)
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "work"), 0o755)
	os.WriteFile(filepath.Join(data, "meta.db"), []byte("tokens"), 0o600)
	key := filepath.Join(t.TempDir(), "registry.key")
	os.WriteFile(key, []byte("KEY"), 0o600)
	data, _ = filepath.EvalSymlinks(data)
	script := fmt.Sprintf(`cat %[1]s/meta.db; cat %[2]s; ls %[1]s; echo work-ok > %[1]s/work/x; cat /proc/%[3]d/environ; test -d /proc/self && echo proc-ok`,
		data, key, os.Getpid())
	argv, err := sb.Masked([]string{"/bin/sh", "-c", script}, []string{data, key}, []string{filepath.Join(data, "work")})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	got := string(out)
	if strings.Contains(got, "tokens") || strings.Contains(got, "KEY") || strings.Contains(got, "\nmeta.db") {
		t.Errorf("a masked command read what was hidden:\n%s", got)
	}
	if !strings.Contains(got, "work\n") || !strings.Contains(got, "proc-ok") {
		t.Errorf("a masked command lost what it should keep:\n%s", got)
	}
	if b, err := os.ReadFile(filepath.Join(data, "work", "x")); err != nil || string(b) != "work-ok\n" {
		t.Errorf("the kept directory is not the host's: %q %v", b, err)
	}
	if strings.Contains(got, "PATH=") {
		t.Errorf("a masked command read its parent's environment:\n%s", got)
	}
}
