// Package sandbox runs untrusted programs (the harness certification builds
// around a connector) with nothing of the certifier's: Linux user, mount,
// PID, IPC, UTS, cgroup and network namespaces, an empty environment plus
// what the caller passes, no file system but the program and the sockets
// of one workspace (read-only), no network (a loopback of its own), no
// capabilities, no nested user namespaces, its own session, and limits on
// address space, CPU time, processes, file size, open files and wall time.
//
// # Why bubblewrap
//
// A mount namespace is only useful once the child has mounted its view of
// the file system, and that has to happen between clone and exec, where a
// Go program cannot run code of its own (os/exec has no hook there; the
// usual way out is to re-execute the certifier as an init process, which
// every binary and test that certifies would then have to support).
// bubblewrap (Debian's bubblewrap package) does exactly that job without
// privileges, is what Flatpak isolates applications with, and reports
// whether setup succeeded on a status descriptor the sandboxed program
// cannot see. Resource limits are set by prlimit (util-linux) on itself
// before it executes bubblewrap, so the sandbox inherits them before any
// untrusted instruction runs.
//
// When the certifier runs as root, each run also executes as a user id of
// its own (a fresh one per run, with no passwd entry): even a process that
// escaped the namespaces could read nothing private of root's, and the
// process limit counts that run's tasks alone.
//
// # Failing closed
//
// [New] fails when bubblewrap or prlimit is missing, and [Workspace.Run]
// returns an error wrapping [ErrUnavailable] when the namespaces cannot be
// set up (user namespaces disabled, a seccomp profile refusing them). Only
// [Options.Insecure] runs programs directly on the host, for local use
// that the report then records.
package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnavailable is wrapped by errors that mean the sandbox itself could
// not be set up on this machine, as opposed to the program failing.
var ErrUnavailable = errors.New("sandbox unavailable")

// Limits bound one run. Zero fields take the defaults in [DefaultLimits].
type Limits struct {
	// Memory is the address space a process may map, in bytes.
	Memory int64
	// CPU is the processor time a process may use.
	CPU time.Duration
	// Processes is how many tasks (processes and threads) may run.
	Processes int
	// FileSize is the largest file a process may write, in bytes.
	FileSize int64
	// OpenFiles is how many descriptors a process may hold.
	OpenFiles int
	// Wall is how long a run may take before it is killed.
	Wall time.Duration
}

// DefaultLimits are generous for a connector's harness and small for
// anything that tries to take the machine down.
var DefaultLimits = Limits{
	Memory:    2 << 30,
	CPU:       60 * time.Second,
	Processes: 128,
	FileSize:  1 << 20,
	OpenFiles: 256,
	Wall:      2 * time.Minute,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	if l.CPU > 0 {
		d.CPU = l.CPU
	}
	if l.Processes > 0 {
		d.Processes = l.Processes
	}
	if l.FileSize > 0 {
		d.FileSize = l.FileSize
	}
	if l.OpenFiles > 0 {
		d.OpenFiles = l.OpenFiles
	}
	if l.Wall > 0 {
		d.Wall = l.Wall
	}
	return d
}

// Options configure a Sandbox.
type Options struct {
	// Insecure runs programs directly on the host, with the environment
	// still cleared but no namespaces and no limits but the wall time. Only
	// a local command may choose it, never a registry.
	Insecure bool
	// TempDir is where workspaces are made (default os.TempDir()). When the
	// certifier runs as root it must be reachable by other users.
	TempDir string
}

// Sandbox runs programs in isolation. It is safe for concurrent use.
type Sandbox struct {
	opts    Options
	bwrap   string
	prlimit string
}

// New finds bubblewrap and prlimit, or fails with [ErrUnavailable]. With
// Options.Insecure it needs neither.
func New(opts Options) (*Sandbox, error) {
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	s := &Sandbox{opts: opts}
	if opts.Insecure {
		return s, nil
	}
	var err error
	if s.bwrap, err = exec.LookPath("bwrap"); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap): %v", ErrUnavailable, err)
	}
	if s.prlimit, err = exec.LookPath("prlimit"); err != nil {
		return nil, fmt.Errorf("%w: prlimit (util-linux) is not installed: %v", ErrUnavailable, err)
	}
	return s, nil
}

// Isolated reports whether programs run in namespaces (false only with
// Options.Insecure).
func (s *Sandbox) Isolated() bool { return !s.opts.Insecure }

// Describe says how programs run, for reports.
func (s *Sandbox) Describe() string {
	if s.opts.Insecure {
		return "unsandboxed (--insecure-no-sandbox): connector code ran on the host with the certifier's privileges"
	}
	return "bubblewrap: user, mount, pid, ipc, uts, cgroup and network namespaces; empty environment; read-only program and sockets only; no capabilities; limits on memory, CPU, processes, file size, open files and wall time"
}

// Workspace is a directory a sandboxed program sees, read-only, at
// [MountPoint]: the program to run and the Unix sockets it may talk to.
type Workspace struct {
	s   *Sandbox
	dir string
}

// MountPoint is where a workspace appears inside the sandbox.
const MountPoint = "/w"

// NewWorkspace makes an empty workspace; Close removes it.
func (s *Sandbox) NewWorkspace() (*Workspace, error) {
	dir, err := os.MkdirTemp(s.opts.TempDir, "flowgen-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox workspace: %w", err)
	}
	// Other users may enter but not list it: a run's own uid reaches the
	// names it is given, nobody else learns them.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox workspace: %w", err)
	}
	return &Workspace{s: s, dir: dir}, nil
}

// Close removes the workspace and everything in it.
func (w *Workspace) Close() error { return os.RemoveAll(w.dir) }

// File returns the host path of name in the workspace, for the caller to
// write (a program goes there with mode 0755).
func (w *Workspace) File(name string) string { return filepath.Join(w.dir, name) }

// Listen opens a Unix socket called name in the workspace and returns it
// with the address a program in the sandbox dials.
func (w *Workspace) Listen(name string) (net.Listener, string, error) {
	host := w.File(name)
	ln, err := net.Listen("unix", host)
	if err != nil {
		return nil, "", fmt.Errorf("sandbox socket: %w", err)
	}
	// Connecting needs write permission on the socket for the run's uid.
	if err := os.Chmod(host, 0o666); err != nil {
		ln.Close()
		return nil, "", fmt.Errorf("sandbox socket: %w", err)
	}
	return ln, w.path(name), nil
}

// Path is where the program sees name of the workspace.
func (w *Workspace) Path(name string) string { return w.path(name) }

// path is where name is seen by the program.
func (w *Workspace) path(name string) string {
	if w.s.opts.Insecure {
		return w.File(name)
	}
	return MountPoint + "/" + name
}

// Command is one program run.
type Command struct {
	// Program names the executable in the workspace. It must be statically
	// linked (CGO_ENABLED=0): the sandbox has no shared libraries.
	Program string
	Args    []string
	// Env is the whole environment, KEY=VALUE.
	Env []string
	// Hostname is what the program's uname reports (default "sandbox").
	Hostname string
	// AsPID1 runs the program as PID 1 of its namespace instead of 2.
	AsPID1 bool
	Stdout io.Writer
	Stderr io.Writer
	Limits Limits
	// Writable names directories of the workspace the program may write
	// (the rest of the workspace is read-only to it).
	Writable []string
}

// Result is how a run ended.
type Result struct {
	// ExitCode is the program's exit status; 128+N when signal N killed it.
	ExitCode int
	// TimedOut is true when the wall-time limit killed it.
	TimedOut bool
	Duration time.Duration
}

// Run runs cmd and waits for it. The error is nil when the program ran,
// whatever its exit status; it wraps [ErrUnavailable] when the sandbox
// could not be set up, and ctx's error when ctx ended the run.
func (w *Workspace) Run(ctx context.Context, cmd Command) (Result, error) {
	lim := cmd.Limits.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, lim.Wall)
	defer cancel()
	var c *exec.Cmd
	var status *os.File
	if w.s.opts.Insecure {
		c = exec.CommandContext(ctx, w.File(cmd.Program), cmd.Args...)
		c.Dir = w.dir
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	} else {
		r, wr, err := os.Pipe()
		if err != nil {
			return Result{}, err
		}
		defer r.Close()
		status = r
		args, err := w.command(cmd, lim)
		if err != nil {
			wr.Close()
			return Result{}, err
		}
		c = exec.CommandContext(ctx, w.s.prlimit, args...)
		c.ExtraFiles = []*os.File{wr} // fd 3: bwrap's --json-status-fd
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if os.Geteuid() == 0 {
			id := runUID()
			c.SysProcAttr.Credential = &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}
		}
		defer wr.Close()
	}
	// prlimit and bwrap get no environment; the program gets cmd.Env (as
	// --setenv arguments, or directly when insecure).
	c.Env = []string{}
	if w.s.opts.Insecure && cmd.Env != nil {
		c.Env = cmd.Env
	}
	c.Stdout, c.Stderr = cmd.Stdout, cmd.Stderr
	var setup bytes.Buffer
	if !w.s.opts.Insecure {
		// bwrap's own complaints go to the same stderr; keep a copy to
		// explain a setup failure.
		c.Stderr = io.MultiWriter(nonNil(cmd.Stderr), &limitedBuffer{w: &setup, n: 4096})
	}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := c.Start(); err != nil {
		return Result{}, fmt.Errorf("%w: starting %s: %v", ErrUnavailable, c.Path, err)
	}
	if status != nil {
		c.ExtraFiles[0].Close() // the child holds its own copy
	}
	var st bwrapStatus
	var readDone chan struct{}
	if status != nil {
		readDone = make(chan struct{})
		go func() {
			defer close(readDone)
			st = readStatus(status)
		}()
	}
	waitErr := c.Wait()
	if readDone != nil {
		<-readDone
	}
	res := Result{Duration: time.Since(start), ExitCode: c.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		res.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		res.ExitCode = 128 + int(syscall.SIGKILL)
		if res.TimedOut {
			return res, nil
		}
		return res, ctx.Err()
	}
	if w.s.opts.Insecure {
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
		if waitErr != nil && !isExit(waitErr) {
			return res, waitErr
		}
		return res, nil
	}
	if !st.started {
		return res, fmt.Errorf("%w: bubblewrap could not set up the namespaces: %s", ErrUnavailable, strings.TrimSpace(setup.String()))
	}
	if st.exited {
		res.ExitCode = st.exitCode
	}
	return res, nil
}

// command builds prlimit's arguments: the limits, then bwrap and its own.
func (w *Workspace) command(cmd Command, lim Limits) ([]string, error) {
	procs := lim.Processes
	if os.Geteuid() != 0 {
		// Without a uid of its own the limit counts every task of this
		// user; leave room for what already runs.
		procs += userTasks(os.Getuid())
	}
	cpu := int64(lim.CPU / time.Second)
	if cpu < 1 {
		cpu = 1
	}
	host := cmd.Hostname
	if host == "" {
		host = "sandbox"
	}
	args := []string{
		"--as=" + strconv.FormatInt(lim.Memory, 10),
		"--cpu=" + strconv.FormatInt(cpu, 10),
		"--nproc=" + strconv.Itoa(procs),
		"--fsize=" + strconv.FormatInt(lim.FileSize, 10),
		"--nofile=" + strconv.Itoa(lim.OpenFiles),
		"--core=0",
		"--", w.s.bwrap,
		"--unshare-all", "--unshare-user", "--disable-userns",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--json-status-fd", "3",
		"--clearenv",
		"--hostname", host,
		"--ro-bind", w.dir, MountPoint,
	}
	for _, name := range cmd.Writable {
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("sandbox: writable directory %q is not in the workspace", name)
		}
		args = append(args, "--bind", w.File(name), w.path(name))
	}
	args = append(args,
		"--remount-ro", "/",
		"--chdir", "/",
	)
	if cmd.AsPID1 {
		args = append(args, "--as-pid-1")
	}
	for _, kv := range cmd.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("sandbox: environment entry %q is not KEY=VALUE", kv)
		}
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--", w.path(cmd.Program))
	return append(args, cmd.Args...), nil
}

// bwrapStatus is what bwrap reported on --json-status-fd.
type bwrapStatus struct {
	started  bool
	exited   bool
	exitCode int
}

// readStatus reads bwrap's JSON status lines: {"child-pid": N, ...} once
// the namespaces are set up, {"exit-code": N} when the program ended.
func readStatus(r io.Reader) bwrapStatus {
	var st bwrapStatus
	dec := json.NewDecoder(bufio.NewReader(io.LimitReader(r, 64<<10)))
	for {
		var m map[string]json.Number
		if err := dec.Decode(&m); err != nil {
			return st
		}
		if _, ok := m["child-pid"]; ok {
			st.started = true
		}
		if code, ok := m["exit-code"]; ok {
			if n, err := code.Int64(); err == nil {
				st.exited, st.exitCode = true, int(n)
			}
		}
	}
}

// runUID picks a user id for one run: high, so that it belongs to nobody
// on the host, and random, so that concurrent runs do not share a process
// count or signal each other.
func runUID() uint32 { return 1<<30 + rand.Uint32N(1<<29) }

// userTasks counts the tasks (threads) that uid runs now.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	want := strconv.Itoa(uid)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		var owner bool
		threads := 1
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(rest)
				owner = len(f) > 0 && f[0] == want
			}
			if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
				if t, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
					threads = t
				}
			}
		}
		if owner {
			n += threads
		}
	}
	return n
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

func nonNil(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// limitedBuffer keeps the first n bytes written to it and discards the
// rest, never failing the writer.
type limitedBuffer struct {
	w *bytes.Buffer
	n int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.n - b.w.Len(); room > 0 {
		b.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Masked wraps argv so that it runs with the host's file system except
// hide: a hidden directory is empty (but for the paths in keep below it),
// a hidden file unreadable. It also gets a PID namespace and /proc of its
// own, so it cannot read the memory or the environment of the process
// that started it. registryd runs its certification worker this way: the
// worker builds and runs connectors (they in a Sandbox of their own, which
// nests) without a view of the signing key or the registry's data.
func (s *Sandbox) Masked(argv, hide, keep []string) ([]string, error) {
	if s.opts.Insecure {
		return nil, fmt.Errorf("%w: an insecure sandbox cannot mask files", ErrUnavailable)
	}
	args := []string{s.bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent"}
	for _, p := range hide {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(abs)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("sandbox: %w", err)
		case info.IsDir():
			args = append(args, "--tmpfs", abs)
		default:
			args = append(args, "--ro-bind", "/dev/null", abs)
		}
	}
	for _, p := range keep {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		args = append(args, "--bind", abs, abs)
	}
	return append(append(args, "--"), argv...), nil
}
