// Package harness is what runs inside the certification sandbox: a
// program certify builds from flowgen's own source (never from the
// artifact), which runs the connector's module the way production does,
// under the wasm host (runtime/wasmhost), with every capability backed by
// the recorder over the sandbox's one socket (package wire).
//
// The connector's code never runs in this process's Go: it runs in the
// module, which reaches nothing but the host functions of its declared
// capabilities. Certification still counts effects, checks egress and
// judges outputs in the recorder, outside the sandbox, and reads no
// verdict from this process's exit status; the sandbox remains the outer
// wall in case the host itself were breached.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
)

// Main is the harness program: "harness run SOCKET" runs the work the
// recorder at SOCKET gives; "harness compile MODULE CACHE" compiles the
// module into the compilation cache CACHE, running none of it. It exits
// 0 when it did its job, 1 when it could not, 2 on a usage error.
func Main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) == 2 && args[0] == "run":
		err = Run(context.Background(), args[1])
	case len(args) == 3 && args[0] == "compile":
		err = Compile(context.Background(), args[1], args[2])
	case len(args) == 0:
		return // certify's check that the sandbox runs programs
	default:
		fmt.Fprintln(os.Stderr, "usage: harness run RECORDER_SOCKET | harness compile MODULE CACHE_DIR")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

// Compile compiles the module at path into the compilation cache dir.
func Compile(ctx context.Context, path, dir string) error {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	h, err := wasmhost.New(ctx, wasmhost.Options{CacheDir: dir})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	return h.Compile(ctx, wasm)
}

// Run fetches the work from the recorder at socket and runs it.
func Run(ctx context.Context, socket string) error {
	c := newClient(socket)
	var work wire.Work
	if err := c.call(ctx, http.MethodGet, wire.PathWork, nil, &work); err != nil {
		return err
	}
	wasm, err := os.ReadFile(work.Module.Path)
	if err != nil {
		return err
	}
	host, err := wasmhost.New(ctx, wasmhost.Options{
		CacheDir: work.Module.Cache,
		// The module's clocks read the same; a connector's own backoff
		// costs no time.
		VirtualSleep: true,
		Report: func(ev wasmhost.Event) {
			c.call(ctx, http.MethodPost, wire.PathEvent, wire.Event{Kind: string(ev.Kind), Detail: ev.Detail, InActivation: ev.InActivation, Key: ev.Key}, nil)
		},
		// What the module writes goes, unredacted, to this process's
		// streams, where certification looks for leaked values.
		Output: func(_, _ string, s wasmhost.Stream, line []byte) {
			w := os.Stdout
			if s == wasmhost.Stderr {
				w = os.Stderr
			}
			w.Write(append(line, '\n'))
		},
	})
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	info := work.Module.Node.NodeInfo()
	shared, err := host.Load(ctx, wasm, info, "")
	if err != nil {
		return err
	}
	module := func() (*wasmhost.Module, error) {
		if !work.Module.FreshInstances {
			return shared, nil
		}
		return host.Load(ctx, wasm, info, "")
	}
	db := newDB(c)
	defer db.Close()
	sem := make(chan struct{}, max(work.Concurrency, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for _, d := range work.Deliveries {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var res wire.Result
			if m, err := module(); err != nil {
				res = wire.Result{ID: d.ID, Error: &wire.Error{Kind: runtime.Transient.String(), Message: err.Error()}}
			} else {
				res = deliver(ctx, m, c, db, d)
				if work.Module.FreshInstances {
					m.Close(ctx)
				}
			}
			if err := c.call(ctx, http.MethodPost, wire.PathResult, res, nil); err != nil {
				mu.Lock()
				firstErr = cmpErr(firstErr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// deliver runs one delivery through the module, with the capabilities
// the engine would grant its declaration, each backed by the recorder.
func deliver(ctx context.Context, m *wasmhost.Module, c *client, db dbHandle, d wire.Delivery) (res wire.Result) {
	res.ID = d.ID
	grants := engine.Grants{
		Transport: c, KV: kvClient{c}, Dedupe: dedupeClient{c}, Blobs: blobClient{c}, DB: db.DB,
		Secrets: secrets(d.Secrets), RNG: seededRNG{rand.New(rand.NewPCG(d.Seed, d.Seed^0x72616e64))},
	}
	clock := newDeliveryClock(d)
	grants.Clock = clock
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dctx, cancel := context.WithTimeout(context.WithValue(ctx, clockKey{}, clock), timeout)
	defer cancel()
	caps := grants.For(m.Info())
	if caps.Clock != nil {
		// The delivery's clock itself, not the grant's one-method
		// wrapper: the wasm host tells it of the sleeps it skips
		// (deliveryClock.Slept). Only the host sees it; the module reads
		// the clock through its host function.
		caps.Clock = clock
	}
	rc := runtime.NewActivationContext(dctx, d.Key, d.Attempt, caps, nil, d.Now)
	out, err := m.Runner().Run(rc, d.Params, d.Input)
	if err != nil {
		e := &wire.Error{Kind: runtime.KindOf(err).String(), Message: err.Error()}
		var re *runtime.Error
		if errors.As(err, &re) {
			e.RetryAfter = re.RetryAfter
		}
		res.Error = e
		return res
	}
	res.Output = out
	return res
}

// seededRNG is a delivery's unseeded rng: a generator of its own, which
// a module cannot tell from the system's.
type seededRNG struct{ r *rand.Rand }

func (s seededRNG) Uint64() uint64 { return s.r.Uint64() }

// client talks to the recorder; it is also the HTTP capability's
// transport, so every request the node sends goes to the recorder.
type client struct {
	http *http.Client
}

func newClient(socket string) *client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 16,
	}
	return &client{http: &http.Client{Transport: tr}}
}

// call posts in (GET when method says so) to path and decodes the answer
// into out when out is not nil.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://recorder"+path, body)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("recorder %s: %w", path, err)
	}
	if clock, ok := ctx.Value(clockKey{}).(*deliveryClock); ok {
		clock.wait(path)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxBody))
	if err != nil {
		return fmt.Errorf("recorder %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("recorder %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// RoundTrip implements http.RoundTripper for the HTTP capability: the
// request goes to the recorder, which plays the provider.
func (c *client) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	var resp wire.HTTPResponse
	in := wire.HTTPRequest{Method: req.Method, URL: req.URL.String(), Header: req.Header, Body: body}
	if clock, ok := req.Context().Value(clockKey{}).(*deliveryClock); ok {
		in.Clock, in.Delivery = clock.sent(), clock.delivery+1
	}
	// Errors name no URL: the HTTP capability wraps them with the
	// request as production shows it (its query left out).
	if err := c.call(req.Context(), http.MethodPost, wire.PathHTTP, in, &resp); err != nil {
		// The cause is the harness's, for whoever reads its stderr; the
		// connector sees what a dropped connection looks like.
		fmt.Fprintf(os.Stderr, "harness: %s %s: %v\n", req.Method, req.URL.Host, err)
		return nil, errors.New("read: connection reset by peer")
	}
	switch {
	case resp.Refused != "":
		return nil, runtime.Errorf(runtime.Permanent, "%s", resp.Refused)
	case resp.Timeout:
		return nil, httpfixture.TimeoutError{}
	}
	return &http.Response{
		StatusCode: resp.Status,
		Status:     fmt.Sprintf("%d %s", resp.Status, http.StatusText(resp.Status)),
		Header:     http.Header(resp.Header),
		Body:       io.NopCloser(bytes.NewReader(resp.Body)),
		Request:    req,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// capErr turns a failure to reach the recorder into a retryable error.
func capErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return runtime.Errorf(runtime.Transient, "%s: %v", what, err)
}

type kvClient struct{ c *client }

func (k kvClient) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var out wire.KVResponse
	err := k.c.call(ctx, http.MethodPost, wire.PathKVGet, wire.KVRequest{Key: key}, &out)
	return out.Value, out.Found, capErr("kv get", err)
}

func (k kvClient) Put(ctx context.Context, key string, value []byte) error {
	return capErr("kv put", k.c.call(ctx, http.MethodPost, wire.PathKVPut, wire.KVRequest{Key: key, Value: value}, nil))
}

type dedupeClient struct{ c *client }

func (d dedupeClient) PutIfAbsent(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	var out wire.DedupeResponse
	err := d.c.call(ctx, http.MethodPost, wire.PathDedupe, wire.DedupeRequest{Key: key, TTL: ttl}, &out)
	return out.Absent, capErr("dedupe", err)
}

type blobClient struct{ c *client }

func (b blobClient) ReadBlob(ctx context.Context, name string) ([]byte, error) {
	var out wire.BlobResponse
	if err := b.c.call(ctx, http.MethodPost, wire.PathBlobRead, wire.BlobRequest{Name: name}, &out); err != nil {
		return nil, capErr("blob read", err)
	}
	if out.Missing {
		return nil, runtime.Errorf(runtime.Permanent, "blob %q does not exist", name)
	}
	return out.Data, nil
}

func (b blobClient) WriteBlob(ctx context.Context, name string, data []byte) error {
	return capErr("blob write", b.c.call(ctx, http.MethodPost, wire.PathBlobWrite, wire.BlobRequest{Name: name, Data: data}, nil))
}

// secrets resolves handles to the values the recorder chose.
type secrets map[string]string

func (s secrets) Secret(_ context.Context, handle string) (string, error) {
	v, ok := s[handle]
	if !ok {
		return "", runtime.Errorf(runtime.Auth, "secret %q has no value in this run", handle)
	}
	return v, nil
}
