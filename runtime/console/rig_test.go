package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/console"
	"github.com/flowgen-dev/flowgen/runtime/jobapi"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// order is the input and output of the test flow's nodes.
type order struct {
	Order string `json:"order"`
	Email string `json:"email,omitempty"`
	Note  string `json:"note,omitempty"`
}

// classes is the data-class table of the test connectors: the email is
// personal data, the rest public.
func classes(part, path string) string {
	if path == "email" {
		return "pii.email"
	}
	return "public"
}

// ordersFlow looks an order up, waits for a human at a checkpoint and
// ships it.
func ordersFlow() *runtime.Flow {
	node := func(id string, effects flowtype.Effects) runtime.Runner {
		info := runtime.NodeInfo{ID: id, Version: "1.0.0", Effects: effects, DataClass: classes}
		return runtime.Typed(info, func(ctx *runtime.Context, _ struct{}, in order) (order, error) { return in, nil })
	}
	return &runtime.Flow{
		Name:    "orders",
		Version: "1.0.0",
		Nodes: []*runtime.FlowNode{
			{Alias: "lookup", Runner: node("test.lookup", flowtype.ReadOnly)},
			{Alias: "approve", Checkpoint: &runtime.Checkpoint{Prompt: "ship it?"}},
			{Alias: "ship", Runner: node("test.ship", flowtype.Effectful)},
		},
		Edges: []runtime.Edge{
			{From: "lookup", FromPort: "out", To: "approve", Delivery: flowtype.AtLeastOnce},
			{From: "approve", FromPort: "approved", To: "ship", Delivery: flowtype.ExactlyOnce},
		},
	}
}

// rig is a server with workers, the job API and the console on one
// store.
type rig struct {
	t      *testing.T
	engine *runtime.Engine
	srv    *httptest.Server
	token  string
	audit  *testutil.SyncBuffer
}

// stores are the backends every console test runs on.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"bolt", func(t *testing.T) store.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "flowgen.db"), boltstore.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"postgres", func(t *testing.T) store.Store {
		s, err := pgstore.Open(context.Background(), pgtest.FreshSchema(t), pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func newRig(t *testing.T, s store.Store) *rig {
	t.Helper()
	e := runtime.New(s, runtime.Options{Owner: "console-test"})
	if err := e.Register(ordersFlow()); err != nil {
		t.Fatal(err)
	}
	audit := &testutil.SyncBuffer{}
	ui, err := console.New(e, console.Options{Flows: e, Actor: "tester", Log: slog.New(slog.NewTextHandler(audit, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, engine: e, token: "secret-token-of-the-test", audit: audit}
	r.srv = httptest.NewServer(jobapi.NewHandler(e, jobapi.HandlerOptions{Token: r.token, Console: ui}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx, 2) }()
	t.Cleanup(func() {
		r.srv.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
		s.Close()
	})
	return r
}

// start starts an order job and returns its id.
func (r *rig) start(o order) runtime.JobID {
	r.t.Helper()
	in, _ := json.Marshal(o)
	job, err := r.engine.Start(context.Background(), "orders", in)
	if err != nil {
		r.t.Fatal(err)
	}
	return job
}

// awaitWaiting waits until job waits at its checkpoint.
func (r *rig) awaitWaiting(job runtime.JobID) {
	r.t.Helper()
	out, err := jobapi.Await(context.Background(), r.engine, job, 20*time.Second)
	if err != nil || len(out.Waiting) == 0 {
		r.t.Fatalf("job %s does not wait at its checkpoint: %+v %v", job, out, err)
	}
}

// browser is an HTTP client with a cookie jar, as a browser is.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (r *rig) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: r.t, base: r.srv.URL, c: c}
}

// get fetches path and returns the status and body.
func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	return b.do(http.MethodGet, path, nil, nil)
}

// post posts form to path.
func (b *browser) post(path string, form url.Values, header http.Header) (int, string) {
	b.t.Helper()
	return b.do(http.MethodPost, path, form, header)
}

func (b *browser) do(method, path string, form url.Values, header http.Header) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	return resp.StatusCode, string(raw)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the form token on page.
func (b *browser) csrf(page string) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no form token on the page:\n%s", page)
	}
	return m[1]
}
