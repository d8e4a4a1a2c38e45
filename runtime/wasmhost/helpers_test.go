package wasmhost_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/wasmbuild"
)

// modules builds each test connector once per test binary, however many
// tests load it.
var modules struct {
	sync.Mutex
	dir   string
	cache string
	built map[string]*builtModule
}

type builtModule struct {
	once sync.Once
	wasm []byte
	mod  *wasmbuild.Module
	err  error
}

// build compiles the connector package in dir (relative to this package)
// declaring info's capabilities, or returns its build error.
func build(t testing.TB, dir string, info runtime.NodeInfo) ([]byte, *wasmbuild.Module, error) {
	t.Helper()
	return buildAs(t, dir, filepath.Base(dir), info)
}

// buildAs is build under another name, for the same package built with
// other capabilities.
func buildAs(t testing.TB, dir, name string, info runtime.NodeInfo) ([]byte, *wasmbuild.Module, error) {
	t.Helper()
	modules.Lock()
	if modules.built == nil {
		modules.built = map[string]*builtModule{}
		d, err := os.MkdirTemp("", "wasmhost-test-")
		if err != nil {
			modules.Unlock()
			t.Fatal(err)
		}
		modules.dir = d
	}
	b := modules.built[name]
	if b == nil {
		b = &builtModule{}
		modules.built[name] = b
	}
	out := filepath.Join(modules.dir, name+".wasm")
	modules.Unlock()
	b.once.Do(func() {
		var caps []flowtype.Capability
		for _, c := range info.Capabilities {
			caps = append(caps, flowtype.Capability(c))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		b.mod, b.err = wasmbuild.Build(ctx, dir, caps, out)
		if b.err == nil {
			b.wasm, b.err = os.ReadFile(out)
		}
	})
	return b.wasm, b.mod, b.err
}

// mustBuild is build that fails the test on a build error.
func mustBuild(t testing.TB, dir string, info runtime.NodeInfo) []byte {
	t.Helper()
	wasm, _, err := build(t, dir, info)
	if err != nil {
		t.Fatalf("build %s: %v", dir, err)
	}
	return wasm
}

// events collects what a host reports.
type events struct {
	mu  sync.Mutex
	all []wasmhost.Event
}

func (e *events) add(ev wasmhost.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) list() []wasmhost.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wasmhost.Event(nil), e.all...)
}

// has reports whether an event of kind whose detail contains detail was
// reported.
func (e *events) has(kind wasmhost.EventKind, detail string) bool {
	for _, ev := range e.list() {
		if ev.Kind == kind && strings.Contains(ev.Detail, detail) {
			return true
		}
	}
	return false
}

// sharedCache is the compilation cache the test binary's hosts share, so
// that a module compiles once per binary.
func sharedCache(t testing.TB) string {
	t.Helper()
	modules.Lock()
	defer modules.Unlock()
	if modules.cache == "" {
		d, err := os.MkdirTemp("", "wasmhost-test-cache-")
		if err != nil {
			t.Fatal(err)
		}
		modules.cache = d
	}
	return modules.cache
}

// newHost starts a host whose events go to ev.
func newHost(t testing.TB, ev *events) *wasmhost.Host {
	t.Helper()
	h, err := wasmhost.New(context.Background(), wasmhost.Options{
		CacheDir: sharedCache(t),
		Report:   ev.add,
		Output:   func(string, string, wasmhost.Stream, []byte) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// outside is what a connector could reach on this machine: a canary
// file, a TCP listener, an abstract Unix socket listener and an HTTP
// server, each counting what reached it.
type outside struct {
	file, canary string
	tcp, unix    string
	url          string
	conns        atomic.Int64 // TCP and Unix connections
	requests     atomic.Int64 // HTTP requests
	posts        atomic.Int64 // HTTP requests with effects
	overrides    atomic.Int64 // HTTP requests asking to be another method
}

func newOutside(t *testing.T) *outside {
	t.Helper()
	o := &outside{}
	b := make([]byte, 12)
	rand.Read(b)
	o.canary = "canary-" + hex.EncodeToString(b)
	o.file = filepath.Join(t.TempDir(), "canary")
	if err := os.WriteFile(o.file, []byte(o.canary), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"tcp", "unix"} {
		addr := "127.0.0.1:0"
		if network == "unix" {
			addr = "@flowgen-wasmhost-test-" + hex.EncodeToString(b)
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		if network == "tcp" {
			o.tcp = ln.Addr().String()
		} else {
			o.unix = ln.Addr().String()
		}
		go func() {
			for {
				c, err := ln.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err == nil {
					o.conns.Add(1)
					c.Close()
				}
			}
		}()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.requests.Add(1)
		if r.Method != http.MethodGet {
			o.posts.Add(1)
		}
		if r.Header.Get("X-HTTP-Method-Override") != "" {
			o.overrides.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	o.url = srv.URL
	return o
}

// eventually waits up to d for cond, polling.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// logicalTime is the activations' logical time.
var logicalTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runNode runs one activation of node with caps and in as its input, and
// returns its output's result field.
func runNode(node runtime.Runner, caps runtime.Capabilities, in map[string]string) (string, error) {
	input, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc := runtime.NewActivationContext(ctx, "", 1, caps, nil, logicalTime)
	out, err := node.Run(rc, nil, input)
	if err != nil {
		return "", err
	}
	var o struct{ Result string }
	if err := json.Unmarshal(out, &o); err != nil {
		return "", err
	}
	return o.Result, nil
}
