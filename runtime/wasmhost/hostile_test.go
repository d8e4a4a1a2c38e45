//go:build !race

package wasmhost_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/hostile/abuse"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/hostile/probe"
)

// The connectors of testdata/hostile come from an outside review of the
// host. Each of these tests is one of its findings: a module that held
// the host past its deadline, hung its start, flooded its log, kept its
// memory, read another connector's secret or framed a read as two
// requests, before the host bounded it. A bound asserted on time is ten
// times what the host needs, and far below what the finding took.

var abuseInfo = abuse.NewNode(&abuse.Connector{}).Info()

// abuseModule loads the abuse connector in a host of its own with opts
// (the shared compilation cache set).
func abuseModule(t *testing.T, opts wasmhost.Options) *wasmhost.Module {
	t.Helper()
	wasm := mustBuild(t, "testdata/hostile/abuse", abuseInfo)
	opts.CacheDir = sharedCache(t)
	h, err := wasmhost.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	m, err := h.Load(context.Background(), wasm, abuseInfo, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runAbuse runs one activation of m with input in and a deadline, and
// returns its result, how long it took and its error.
func runAbuse(m *wasmhost.Module, in map[string]any, timeout time.Duration) (string, time.Duration, error) {
	input, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	out, err := m.Runner().Run(runtime.NewActivationContext(ctx, "", 1, runtime.Capabilities{}, nil, logicalTime), nil, input)
	var o struct{ Result string }
	json.Unmarshal(out, &o)
	return o.Result, time.Since(start), err
}

// TestOutputIsBounded: one write host call (a writev of 100,000 iovecs
// over one 1 MiB buffer: 100 GiB) and a write of 100,000 lines with 1 MiB
// of input to redact cost the host at most its output budget, and end
// with the activation's deadline.
func TestOutputIsBounded(t *testing.T) {
	t.Parallel()
	var ev events
	var bytes atomic.Int64
	m := abuseModule(t, wasmhost.Options{Report: ev.add, Output: func(_, _ string, _ wasmhost.Stream, line []byte) { bytes.Add(int64(len(line))) }})
	res, took, _ := runAbuse(m, map[string]any{"do": "iov", "n": 100000, "m": 1 << 20}, time.Second)
	if took > 20*time.Second || bytes.Load() > 1<<20 || !ev.has(wasmhost.EventOutput, "dropped") {
		t.Errorf("writev of 100 GiB: %q in %s, %d bytes reached the output, events %v", res, took, bytes.Load(), ev.list())
	}

	var lines atomic.Int64
	logged := abuseModule(t, wasmhost.Options{Report: ev.add, Logger: slog.New(slog.NewTextHandler(countingWriter{&lines}, nil))})
	_, took, err := runAbuse(logged, map[string]any{"do": "stdoutnl", "n": 100000, "arg": strings.Repeat("a", 1<<20)}, time.Second)
	if took > 20*time.Second || lines.Load() > 100000 {
		t.Errorf("100,000 lines to redact against 1 MiB of input: %v in %s, %d lines logged", err, took, lines.Load())
	}
}

type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) { w.n.Add(1); return len(p), nil }

// TestStartIsBounded: a package init function that sleeps for a century,
// or waits in one poll_oneoff host call on no clock, fails the start at
// its deadline instead of hanging Load.
func TestStartIsBounded(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"initsleep", "initpoll"} {
		t.Run(name, func(t *testing.T) {
			dir := "testdata/hostile/" + name
			info := specInfo(t, dir)
			wasm := mustBuild(t, dir, info)
			h := newHost(t, &events{})
			if err := h.Compile(context.Background(), wasm); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := h.Load(ctx, wasm, info, "")
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "refused") {
					t.Errorf("Load of a module that never starts: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("Load with a 2s deadline has not returned after %s", time.Since(start).Round(time.Second))
			}
		})
	}
}

// specInfo is the declaration of the connector in dir, from its spec:
// importing a package whose init never returns would run it natively.
func specInfo(t *testing.T, dir string) runtime.NodeInfo {
	t.Helper()
	spec, diags := connectorspec.Load(dir + "/connector.yaml")
	if spec == nil {
		t.Fatal(diags.Err())
	}
	decl, err := gen.Declare(spec)
	if err != nil {
		t.Fatal(err)
	}
	return decl.NodeInfo()
}

// TestEventsAreCounted: a module refused 100,000 times in one activation
// reports the first few refusals and counts the rest in one event.
func TestEventsAreCounted(t *testing.T) {
	t.Parallel()
	var ev events
	m := abuseModule(t, wasmhost.Options{Report: ev.add, Output: func(string, string, wasmhost.Stream, []byte) {}})
	if _, _, err := runAbuse(m, map[string]any{"do": "events", "n": 100000}, time.Minute); err != nil {
		t.Fatal(err)
	}
	all := ev.list()
	if len(all) > 17 || !ev.has(wasmhost.EventSuppressed, "99984 more") {
		t.Errorf("%d events for 100,000 refusals, the last %v", len(all), all[len(all)-1])
	}
}

// TestPoolLetsLargeInstancesGo: an instance that grew to hold 100 MiB is
// closed when its activation ends instead of kept idle; a small one is
// kept.
func TestPoolLetsLargeInstancesGo(t *testing.T) {
	t.Parallel()
	m := abuseModule(t, wasmhost.Options{Report: func(wasmhost.Event) {}, Output: func(string, string, wasmhost.Stream, []byte) {}})
	if _, _, err := runAbuse(m, map[string]any{"do": "grow", "n": 100}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := m.Idle(); n != 0 {
		t.Errorf("%d instances idle after one grew to 100 MiB, want it closed", n)
	}
	if _, _, err := runAbuse(m, map[string]any{"do": "echo"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := m.Idle(); n != 1 {
		t.Errorf("%d instances idle after a small activation, want it kept", n)
	}
}

var probeInfo = probe.NewNode(&probe.Connector{}).Info()

// probeModule loads the probe connector with its events going to ev.
func probeModule(t *testing.T, ev *events) *wasmhost.Module {
	t.Helper()
	wasm := mustBuild(t, "testdata/hostile/probe", probeInfo)
	m, err := newHost(t, ev).Load(context.Background(), wasm, probeInfo, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// probeRequest is a request the probe sends: its header spelled as given.
type probeRequest struct {
	URL    string            `json:"url"`
	Header map[string]string `json:"header,omitempty"`
}

// runProbe runs one activation of the probe: do, and the requests or
// the secret handle.
func runProbe(t *testing.T, m *wasmhost.Module, caps runtime.Capabilities, do string, reqs []probeRequest, handle string) string {
	t.Helper()
	in := map[string]any{"do": do}
	if reqs != nil {
		b, _ := json.Marshal(reqs)
		in["requests"] = string(b)
	}
	if handle != "" {
		in["handle"] = handle
	}
	input, _ := json.Marshal(in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := m.Runner().Run(runtime.NewActivationContext(ctx, "", 1, caps, nil, logicalTime), nil, input)
	if err != nil {
		t.Fatal(err)
	}
	var o struct{ Result string }
	json.Unmarshal(out, &o)
	return o.Result
}

// TestSecretsAreTheDeclaredOnes: a connector that declares the handle
// own/key gets it, and not another connector's, though the engine's
// secrets backend holds both; the attempt is reported.
func TestSecretsAreTheDeclaredOnes(t *testing.T) {
	t.Setenv("FLOWGEN_SECRET_OWN_KEY", "own-value")
	t.Setenv("FLOWGEN_SECRET_PAYMENTS_STRIPE_KEY", "sk_live_another_connectors")
	var ev events
	m := probeModule(t, &ev)
	caps := engine.Grants{}.For(probeInfo)
	if res := runProbe(t, m, caps, "secret", nil, "own/key"); !strings.Contains(res, `"own-value"`) {
		t.Errorf("the declared handle: %s", res)
	}
	if res := runProbe(t, m, caps, "secret", nil, "payments/stripe-key"); strings.Contains(res, "sk_live") || !strings.Contains(res, "PolicyDenied") {
		t.Errorf("another connector's handle: %s", res)
	}
	if !ev.has(wasmhost.EventCapability, "payments/stripe-key") {
		t.Errorf("the attempt was not reported: %v", ev.list())
	}
}

// TestEgressTricks: none of the ways a URL, a redirect or a header can
// name another host reaches one: the allowed host is routed to server A,
// and server B, on the same machine, sees nothing.
func TestEgressTricks(t *testing.T) {
	var bHits atomic.Int64
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			w.Header().Set("Location", to)
			w.WriteHeader(http.StatusFound)
			return
		}
		fmt.Fprint(w, "A")
	}))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bHits.Add(1)
		fmt.Fprint(w, "B-REACHED")
	}))
	defer b.Close()
	bu, _ := url.Parse(b.URL)
	pb := bu.Port()
	target, _ := url.Parse(a.URL)
	caps := engine.Grants{Transport: &engine.ConnectTo{Routes: []engine.ConnectRoute{{Host: "api.example.com", Target: target}}}}.For(probeInfo)
	redirect := func(to string) string { return "http://api.example.com/r?to=" + url.QueryEscape(to) }
	var reqs []probeRequest
	for _, u := range []string{
		"http://127.0.0.1:" + pb + "/", "http://api.example.com@127.0.0.1:" + pb + "/", "http://127.0.0.1:" + pb + "#@api.example.com/",
		"http://127.0.0.1:" + pb + `\@api.example.com/`, "http://localhost:" + pb + "/", "http://[::ffff:127.0.0.1]:" + pb + "/",
		"http://[::1]:" + pb + "/", "http://2130706433:" + pb + "/", "http://0x7f.1:" + pb + "/", "http://127.1:" + pb + "/",
		"http://[fe80::1%25lo]:" + pb + "/", "HTTP://127.0.0.1:" + pb + "/", "http:127.0.0.1:" + pb + "/", "http:/127.0.0.1:" + pb + "/",
		"//127.0.0.1:" + pb + "/", "http://api.example.com%C2%A0/", "http://api.example.com./", "http://API.EXAMPLE.COM:" + pb + "/",
		"http://api.\u212Axample.com/", redirect("http://127.0.0.1:" + pb + "/"), redirect("http://api.example.com@127.0.0.1:" + pb + "/"),
		redirect("//127.0.0.1:" + pb + "/"), redirect("http://localhost:" + pb + "/"), redirect("http:127.0.0.1:" + pb + "/"),
	} {
		reqs = append(reqs, probeRequest{URL: u})
	}
	reqs = append(reqs, probeRequest{URL: "http://api.example.com/h", Header: map[string]string{"Host": "127.0.0.1:" + pb}},
		probeRequest{URL: "http://api.example.com/h", Header: map[string]string{"host": "127.0.0.1:" + pb}})
	res := runProbe(t, probeModule(t, &events{}), caps, "get", reqs, "")
	if n := bHits.Load(); n > 0 || strings.Contains(res, "B-REACHED") {
		t.Errorf("server B, not allowed, got %d requests:\n%s", n, res)
	}
}

// TestReadCannotFrameRequests: a read that spells a framing header its
// own way (content-length in lower case, which net/http would send as
// given) is refused, so that a server which answers before reading a
// body never reads the rest of it as a second request, a DELETE.
func TestReadCannotFrameRequests(t *testing.T) {
	srv := newNaiveServer(t)
	target, _ := url.Parse("http://" + srv.ln.Addr().String())
	caps := engine.Grants{Transport: &engine.ConnectTo{Routes: []engine.ConnectRoute{{Host: "api.example.com", Target: target}}}}.For(probeInfo)
	var ev events
	prefix := "GET /two HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: Go-http-client/1.1\r\nX-A: "
	res := runProbe(t, probeModule(t, &ev), caps, "get", []probeRequest{
		{URL: "http://api.example.com/one", Header: map[string]string{"content-length": strconv.Itoa(len(prefix))}},
		{URL: "http://api.example.com/two", Header: map[string]string{"X-A": "DELETE /item/1 HTTP/1.1", "transfer-encoding": "chunked"}},
		{URL: "http://api.example.com/three"},
	}, "")
	if strings.Count(res, "frames the connection") != 2 || !ev.has(wasmhost.EventCapability, "content-length") {
		t.Errorf("reads with framing headers: %s; events %v", res, ev.list())
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.lines) != 1 || srv.lines[0] != "GET /three HTTP/1.1" {
		t.Errorf("the server saw request lines %q, want only the plain read", srv.lines)
	}
}

// naiveServer is an HTTP/1.1 server that answers each request as soon as
// its head arrives and then skips the body its Content-Length announces,
// as many servers and proxies do; it records every request line.
type naiveServer struct {
	mu    sync.Mutex
	lines []string
	ln    net.Listener
}

func newNaiveServer(t *testing.T) *naiveServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &naiveServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go n.serve(c)
		}
	}()
	return n
}

func (n *naiveServer) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		n.mu.Lock()
		n.lines = append(n.lines, strings.TrimSpace(line))
		n.mu.Unlock()
		length := 0
		for {
			h, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if h = strings.TrimSpace(h); h == "" {
				break
			}
			if k, v, _ := strings.Cut(h, ":"); strings.EqualFold(strings.TrimSpace(k), "content-length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if _, err := r.Discard(length); err != nil {
			return
		}
	}
}
