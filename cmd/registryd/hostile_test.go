package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"golang.org/x/sys/unix"
)

// TestHostileUploadReachesNothing: two uploaded connectors try to read
// registryd's signing key and a canary in its data directory, read the
// environment, and reach a listener on the host, from init, from test
// files and from Run. One does it with the standard library: its module
// runs, every attempt reaches only the wasm host's refusal, and the
// confinement check rejects it. The other makes raw system calls from
// waived assembly, which cannot become a module at all: the build gate
// rejects it before any of its code runs. inotify sees no open of the key
// or the canary while registryd certifies, and the listener sees no
// connection. Then the same code run natively, by its own tests as an
// author runs them, does reach both, which shows the probes work.
func TestHostileUploadReachesNothing(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the hostile connector's raw system calls are written for amd64, not %s", runtime.GOARCH)
	}
	repo, _ := filepath.Abs("../..")
	e := &e2e{t: t, repo: repo, bin: buildBinaries(t, repo), dataDir: t.TempDir()}
	e.addr = freeAddr(t)
	e.url = "https://" + e.addr
	e.cert, e.key, e.client = selfSigned(t)
	e.storage = []string{"--data-dir", e.dataDir}
	// The hostile connectors' modules are example.com/hostile/...: the
	// namespace is given that prefix (and exercises the flag).
	e.serveArgs = []string{"--module-prefix", "hostile=example.com/hostile"}
	canary := filepath.Join(e.dataDir, "canary-secret.txt")
	if err := os.WriteFile(canary, []byte("canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The embedded metadata store has one owner: the token comes first.
	admin := e.tokenCreate("--name", "ci", "--scope", "admin")
	e.start()
	t.Cleanup(func() {
		e.proc.Process.Signal(syscall.SIGTERM)
		e.proc.Wait()
		if t.Failed() {
			t.Logf("registryd log (tail):\n%s", tail(e.logs.String(), 40))
		}
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	opens := watchOpens(t, e.dataDir)

	key := filepath.Join(e.dataDir, "registry.key")
	port := ln.Addr().(*net.TCPAddr).Port
	copies := map[string]string{}
	for _, name := range []string{"static", "sandboxed"} {
		copies[name] = hostileCopy(t, repo, name, map[string]string{
			"KEY_PATH": key, "CANARY_PATH": canary, "DATA_DIR": e.dataDir, "LISTEN_IP": "127.0.0.1",
			"LISTEN_ADDR": ln.Addr().String(), "0 // LISTEN_PORT": strconv.Itoa(port),
		})
	}
	opens.reset()
	for name, want := range map[string]string{
		"static":    "confinement: the module tried",
		"sandboxed": "is written in assembly for other architectures (syscall_amd64.s), which WebAssembly cannot run",
	} {
		out, errOut, code := e.flowgen(admin, "publish", "--namespace", "hostile", copies[name])
		// The answer says how to publish a fixed version: numbers are spent.
		if code == 0 || !strings.Contains(out+errOut, "rejected") || !strings.Contains(out+errOut, want) ||
			!strings.Contains(out, "next: versions are write-once, so publish the fix as a higher version: raise version in connector.yaml above 1.0.0") {
			t.Fatalf("publish %s: exit %d, want a rejection naming %q\n%s%s", name, code, want, out, errOut)
		}
	}
	if got := opens.names(); len(got) > 0 {
		t.Errorf("while registryd certified, something opened %v in its data directory", got)
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("the host's listener saw %d connections", n)
	}

	// The control: natively, in the author's own tests, the same code
	// reaches both (whether its fixture then passes does not matter).
	cmd := exec.Command("go", "test", "-count=1", "-run", "TestFixtures", ".")
	cmd.Dir = copies["sandboxed"]
	out, _ := cmd.CombinedOutput()
	if got := opens.names(); !strings.Contains(strings.Join(got, " "), "canary-secret.txt") || conns.Load() == 0 {
		t.Fatalf("the probes did not notice the native run: opens %v, connections %d\n%s", got, conns.Load(), out)
	}
}

// hostileCopy copies testdata/hostile/name into a module of its own with
// the placeholders replaced, in a workspace that builds it against this
// checkout, and returns its directory.
func hostileCopy(t *testing.T, repo, name string, values map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("testdata", "hostile", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		data, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if ent.Name() == "connector.go" || ent.Name() == "connector_test.go" {
			for k, v := range values {
				s = strings.ReplaceAll(s, k, v)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, ent.Name()), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flowgen, err := flowgenmod.Build(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/hostile/" + name + "\n\ngo 1.26.0\n\nrequire github.com/flowgen-dev/flowgen " + flowgen.Version + "\n"
	gosum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string]string{
		filepath.Join(dir, "go.mod"):   gomod,
		filepath.Join(dir, "go.sum"):   string(gosum),
		filepath.Join(root, "go.work"): "go 1.26.0\n\nuse ./" + name + "\n\nreplace github.com/flowgen-dev/flowgen => " + repo + "\n",
	} {
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// openWatch records the names of files opened or read in a directory.
type openWatch struct {
	mu   sync.Mutex
	seen []string
}

func (w *openWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = nil
}

// names lists, once each, what was opened of interest: anything but
// registryd's own stores (its metadata file and blob and work trees).
func (w *openWatch) names() []string {
	time.Sleep(100 * time.Millisecond) // let the reader drain what is queued
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, n := range w.seen {
		if !strings.Contains(strings.Join(out, "\x00"), n) {
			out = append(out, n)
		}
	}
	return out
}

// watchOpens watches dir with inotify until the test ends.
func watchOpens(t *testing.T, dir string) *openWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	w := &openWatch{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EAGAIN || n <= 0 {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
				name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen], "\x00"))
				off += unix.SizeofInotifyEvent + nameLen
				if name == "registry.key" || name == "canary-secret.txt" {
					w.mu.Lock()
					w.seen = append(w.seen, name)
					w.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		unix.Close(fd)
	})
	return w
}
