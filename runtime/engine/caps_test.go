package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/storetest"
)

func TestHTTPCapabilityClassifiesAndEnforcesEgress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("ETag", `"v1"`)
			w.Write([]byte("hello"))
		case "/auth":
			w.WriteHeader(401)
		case "/forbidden":
			w.WriteHeader(403)
		case "/throttled": // a 403 that says when to come back (GitHub's secondary rate limit)
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(403)
		case "/slow-down":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(429)
		case "/broken":
			w.WriteHeader(503)
		case "/bad":
			w.WriteHeader(422)
		case "/away":
			http.Redirect(w, r, "http://elsewhere.example/x", http.StatusFound)
		case "/echo-key":
			w.Write([]byte(r.Header.Get("Idempotency-Key")))
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	h := NewHTTP(nil, []string{u.Hostname()})
	ctx := context.Background()

	resp, err := h.Get(ctx, srv.URL+"/ok", nil)
	if err != nil || string(resp.Body) != "hello" {
		t.Fatalf("ok: %+v %v", resp, err)
	}
	for path, want := range map[string]runtime.ErrorKind{"/auth": runtime.Auth, "/forbidden": runtime.Auth, "/throttled": runtime.RateLimited, "/slow-down": runtime.RateLimited, "/broken": runtime.Transient, "/bad": runtime.Permanent, "/away": runtime.PolicyDenied} {
		_, err := h.Get(ctx, srv.URL+path, nil)
		if err == nil || runtime.KindOf(err) != want {
			t.Errorf("%s: %v (kind %v), want %v", path, err, runtime.KindOf(err), want)
		}
	}
	_, err = h.Get(ctx, srv.URL+"/slow-down", nil)
	var e *runtime.Error
	if !errors.As(err, &e) || e.RetryAfter != 7*time.Second {
		t.Errorf("Retry-After not carried: %v", err)
	}
	if _, err := NewHTTP(nil, []string{"api.example.com"}).Get(ctx, srv.URL+"/ok", nil); runtime.KindOf(err) != runtime.PolicyDenied {
		t.Errorf("host outside allowlist: %v", err)
	}
	resp, err = h.Do(ctx, http.MethodPost, srv.URL+"/echo-key", http.Header{"Idempotency-Key": {"k1"}}, []byte("{}"))
	if err != nil || string(resp.Body) != "k1" {
		t.Errorf("header not sent: %+v %v", resp, err)
	}
	if _, err := h.GetPinned(ctx, srv.URL+"/ok", `"v1"`, nil); err != nil {
		t.Errorf("pinned by ETag: %v", err)
	}
	if _, err := h.GetPinned(ctx, srv.URL+"/ok", "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", nil); err != nil {
		t.Errorf("pinned by hash: %v", err)
	}
	if _, err := h.GetPinned(ctx, srv.URL+"/ok", `"v2"`, nil); runtime.KindOf(err) != runtime.Permanent {
		t.Errorf("moved pin: %v", err)
	}
}

// TestEgressOnLocalPorts: the runtime admits exactly what the allowlist
// admits, ports included: a local test server is reachable through
// "127.0.0.1:PORT" or "localhost", and not on another port.
func TestEgressOnLocalPorts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ctx := context.Background()
	for _, c := range []struct {
		egress []string
		ok     bool
	}{
		{[]string{u.Host}, true},
		{[]string{"127.0.0.1"}, true},
		{[]string{"127.0.0.1:1"}, false},
		{[]string{"localhost"}, false}, // the URL says 127.0.0.1
		{[]string{"api.example.com"}, false},
	} {
		_, err := NewHTTP(nil, c.egress).Get(ctx, srv.URL+"/x", nil)
		if (err == nil) != c.ok {
			t.Errorf("egress %v: %v", c.egress, err)
		}
	}
}

func TestStoreBackedCapabilities(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "caps.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	kv := NewStoreKV(s, "orders.normalize")
	if _, ok, err := kv.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("empty kv: %v %v", ok, err)
	}
	if err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := kv.Get(ctx, "k"); !ok || err != nil || string(v) != "v" {
		t.Fatalf("kv: %q %v %v", v, ok, err)
	}
	if _, ok, _ := NewStoreKV(s, "other").Get(ctx, "k"); ok {
		t.Fatal("namespaces leak")
	}
	d := NewStoreDedupe(s, "orders.normalize", clock.Now)
	for i, want := range []bool{true, false} {
		if got, err := d.PutIfAbsent(ctx, "key", time.Minute); err != nil || got != want {
			t.Fatalf("put %d: %v %v", i, got, err)
		}
	}
	// Another connector's claims are its own: it can neither see nor
	// take this one's.
	if got, err := NewStoreDedupe(s, "other", clock.Now).PutIfAbsent(ctx, "key", time.Minute); err != nil || !got {
		t.Fatalf("another namespace saw the claim: %v %v", got, err)
	}
	clock.Advance(time.Minute + time.Second)
	if got, _ := d.PutIfAbsent(ctx, "key", time.Minute); !got {
		t.Fatal("expired key still present")
	}
}

// TestDedupeCannotReachEngineRecords: a connector's dedupe claims never
// read or write the engine's exactly-once edge records, whatever key it
// names; a claim recorded before namespaces still counts until it
// expires.
func TestDedupeCannotReachEngineRecords(t *testing.T) {
	t.Parallel()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	clock := storetest.NewClock()
	edge := []byte("dedupe/edge/e1")
	legacy := []byte("dedupe/old-claim")
	expires := binary.BigEndian.AppendUint64(nil, uint64(clock.Now().Add(time.Hour).UnixNano()))
	if err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.Put(edge, expires); err != nil {
			return err
		}
		return tx.Put(legacy, expires)
	}); err != nil {
		t.Fatal(err)
	}
	d := NewStoreDedupe(s, "payments.charge", clock.Now)
	for _, key := range []string{"edge/e1", "edge/e2", "../edge/e1"} {
		if got, err := d.PutIfAbsent(ctx, key, time.Minute); err != nil || !got {
			t.Errorf("claim %q: %v %v, want it fresh (the engine's records are out of reach)", key, got, err)
		}
	}
	if err := s.View(ctx, func(tx store.ReadTx) error {
		if v, err := tx.Get(edge); err != nil || !bytes.Equal(v, expires) {
			t.Errorf("the engine's edge record after the claims: %x %v", v, err)
		}
		if _, err := tx.Get([]byte("dedupe/edge/e2")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a claim wrote into the engine's records: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := d.PutIfAbsent(ctx, "old-claim", time.Minute); err != nil || got {
		t.Errorf("a claim recorded before namespaces: fresh %v %v, want present until it expires", got, err)
	}
	clock.Advance(2 * time.Hour)
	if got, err := d.PutIfAbsent(ctx, "old-claim", time.Minute); err != nil || !got {
		t.Errorf("an expired claim recorded before namespaces: fresh %v %v", got, err)
	}
}

func TestDiskBlobs(t *testing.T) {
	t.Parallel()
	b, err := NewDiskBlobs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.WriteBlob(ctx, "invoices/2026/o-1.pdf", []byte("pdf")); err != nil {
		t.Fatal(err)
	}
	if got, err := b.ReadBlob(ctx, "invoices/2026/o-1.pdf"); err != nil || string(got) != "pdf" {
		t.Fatalf("read: %q %v", got, err)
	}
	for _, bad := range []string{"../escape", "/etc/passwd", "", "a/../../b"} {
		if err := b.WriteBlob(ctx, bad, nil); runtime.KindOf(err) != runtime.PolicyDenied {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := b.ReadBlob(ctx, "missing"); runtime.KindOf(err) != runtime.Permanent {
		t.Errorf("missing blob: %v", err)
	}
}

func TestGrantsGiveOnlyDeclaredCapabilities(t *testing.T) {
	g := Grants{BlobDir: t.TempDir(), Seed: 7}
	pure := g.For(runtime.NodeInfo{ID: "p"})
	if pure != (runtime.Capabilities{}) {
		t.Fatalf("pure node got %+v", pure)
	}
	ro := g.For(runtime.NodeInfo{ID: "r", Capabilities: []string{"http.read", "rng.seeded"}, Egress: []string{"a.example"}})
	if ro.HTTPRead == nil || ro.HTTPWrite != nil || ro.BlobWrite != nil || ro.RNG == nil {
		t.Fatalf("read-only node got %+v", ro)
	}
	a, b := g.For(runtime.NodeInfo{Capabilities: []string{"rng.seeded"}}).RNG, g.For(runtime.NodeInfo{Capabilities: []string{"rng.seeded"}}).RNG
	if a.Uint64() != b.Uint64() {
		t.Fatal("seeded rng differs between activations with one seed")
	}
	// Each activation draws the sequence its key selects: the same key on
	// every attempt, another key another sequence.
	draw := func(key string, attempt int) uint64 {
		caps := g.For(runtime.NodeInfo{Capabilities: []string{"rng.seeded"}})
		return runtime.NewActivationContext(context.Background(), key, attempt, caps, nil, time.Time{}).Caps().RNG.Uint64()
	}
	if draw("k1", 1) != draw("k1", 3) || draw("k1", 1) == draw("k2", 1) {
		t.Fatal("the seeded rng does not follow the activation's key")
	}
	t.Setenv("FLOWGEN_SECRET_STRIPE_SECRET_KEY", "sk_test")
	t.Setenv("FLOWGEN_SECRET_OTHER_TEAM_KEY", "sk_other")
	sec := g.For(runtime.NodeInfo{ID: "c", Capabilities: []string{"secrets"}, Secrets: []string{"stripe/secret-key", "missing/handle"}}).Secrets
	if v, err := sec.Secret(context.Background(), "stripe/secret-key"); err != nil || v != "sk_test" {
		t.Fatalf("secret: %q %v", v, err)
	}
	if _, err := sec.Secret(context.Background(), "missing/handle"); runtime.KindOf(err) != runtime.Auth {
		t.Fatalf("missing secret: %v", err)
	}
	// A handle the node does not declare is refused, though the backend
	// holds it: secrets are bound to the connectors that declare them.
	if v, err := sec.Secret(context.Background(), "other-team/key"); runtime.KindOf(err) != runtime.PolicyDenied || v != "" {
		t.Fatalf("undeclared secret: %q %v", v, err)
	}
}

// TestReadCapabilitiesDoNotAssertToWrites: a node granted only reads
// cannot find a write method on what it holds, whatever backs it (the
// HTTP client, the store, a database all implement both sides).
func TestReadCapabilitiesDoNotAssertToWrites(t *testing.T) {
	t.Parallel()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "caps.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	db := sql.OpenDB(nil) // never queried
	t.Cleanup(func() { db.Close() })
	g := Grants{Store: st, BlobDir: t.TempDir(), DB: db}
	caps := g.For(runtime.NodeInfo{ID: "r", Egress: []string{"a.example"},
		Capabilities: []string{"http.read", "http.read.pinned", "kv.read", "blob.read", "db.read", "clock", "secrets"}})
	reads := map[string]any{"HTTPRead": caps.HTTPRead, "HTTPPinned": caps.HTTPPinned, "KVRead": caps.KVRead,
		"BlobRead": caps.BlobRead, "DBRead": caps.DBRead, "Clock": caps.Clock, "Secrets": caps.Secrets}
	for name, v := range reads {
		if v == nil || reflect.ValueOf(v).IsZero() {
			t.Fatalf("%s was not granted", name)
		}
		if _, ok := v.(runtime.HTTPWriter); ok {
			t.Errorf("%s (%T) asserts to HTTPWriter", name, v)
		}
		if _, ok := v.(runtime.KVWriter); ok {
			t.Errorf("%s (%T) asserts to KVWriter", name, v)
		}
		if _, ok := v.(runtime.BlobWriter); ok {
			t.Errorf("%s (%T) asserts to BlobWriter", name, v)
		}
		if _, ok := v.(runtime.DBWriter); ok {
			t.Errorf("%s (%T) asserts to DBWriter", name, v)
		}
		if _, ok := v.(runtime.DedupeStore); ok {
			t.Errorf("%s (%T) asserts to DedupeStore", name, v)
		}
		if n := reflect.TypeOf(v).NumMethod(); n != 1 {
			t.Errorf("%s (%T) has %d exported methods, want exactly its capability's one", name, v, n)
		}
	}
	if caps.HTTPWrite != nil || caps.KVWrite != nil || caps.BlobWrite != nil || caps.DBWrite != nil || caps.Dedupe != nil {
		t.Errorf("undeclared writes granted: %+v", caps)
	}
}

// TestPublicTransportRefusesLocal: a connector allowed a name that
// resolves to this machine (localhost here; a rebinding DNS answer
// elsewhere) connects to nothing; an operator's route to a local
// stand-in still works.
func TestPublicTransportRefusesLocal(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	info := runtime.NodeInfo{ID: "c", Capabilities: []string{"http.read"}, Egress: []string{"localhost", "api.example.com"}}
	ctx := context.Background()
	for _, g := range []Grants{{}, {Transport: &ConnectTo{Routes: []ConnectRoute{{Host: "api.example.com", Target: u}}}}} {
		_, err := g.For(info).HTTPRead.Get(ctx, "http://localhost:"+u.Port()+"/", nil)
		if runtime.KindOf(err) != runtime.PolicyDenied || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("a name resolving to loopback: %v", err)
		}
	}
	routed := Grants{Transport: &ConnectTo{Routes: []ConnectRoute{{Host: "api.example.com", Target: u}}}}.For(info)
	if _, err := routed.HTTPRead.Get(ctx, "http://api.example.com/", nil); err != nil {
		t.Errorf("an operator's route to a local stand-in: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the local server saw %d requests, want the routed one", n)
	}
}

// TestSecretsGoOnlyWhereTheSpecSends: a request that carries a secret of
// the activation, as it is or encoded, to a host its spec does not send
// it to is refused before it leaves, redirects included; the host it is
// for gets it.
func TestSecretsGoOnlyWhereTheSpecSends(t *testing.T) {
	t.Setenv("FLOWGEN_SECRET_CRM_KEY", "crm_live_7Hq2Zr9Wk3")
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, "http://other.example.com/landed", http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	routes := &ConnectTo{Routes: []ConnectRoute{{Host: "api.example.com", Target: u}, {Host: "other.example.com", Target: u}}}
	info := runtime.NodeInfo{ID: "c", Capabilities: []string{"http.write", "secrets"}, Egress: []string{"api.example.com", "other.example.com"},
		Secrets: []string{"crm/key"}, SecretHosts: map[string][]string{"crm/key": {"api.example.com"}}}
	caps := Grants{Transport: routes}.For(info)
	ctx := context.Background()
	key, err := caps.Secrets.Secret(ctx, "crm/key")
	if err != nil {
		t.Fatal(err)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+key))
	if _, err := caps.HTTPWrite.Do(ctx, "POST", "http://api.example.com/ok", http.Header{"Authorization": {basic}}, nil); err != nil {
		t.Errorf("to the host the secret is for: %v", err)
	}
	for name, send := range map[string]func() error{
		"in a header": func() error {
			_, err := caps.HTTPWrite.Do(ctx, "POST", "http://other.example.com/h", http.Header{"X-Api-Key": {key}}, nil)
			return err
		},
		"in Basic auth": func() error {
			_, err := caps.HTTPWrite.Do(ctx, "POST", "http://other.example.com/b", http.Header{"Authorization": {basic}}, nil)
			return err
		},
		"URL-encoded in the query": func() error {
			_, err := caps.HTTPWrite.Do(ctx, "GET", "http://other.example.com/q?k="+url.QueryEscape(key), nil, nil)
			return err
		},
		"in the body, in upper case": func() error {
			_, err := caps.HTTPWrite.Do(ctx, "POST", "http://other.example.com/p", nil, []byte(`{"k":"`+strings.ToUpper(key)+`"}`))
			return err
		},
		"through a redirect": func() error {
			_, err := caps.HTTPWrite.Do(ctx, "POST", "http://api.example.com/bounce", http.Header{"X-Api-Key": {key}}, []byte("x"))
			return err
		},
	} {
		if err := send(); runtime.KindOf(err) != runtime.PolicyDenied || !strings.Contains(err.Error(), "carries secret crm/key") {
			t.Errorf("%s: %v, want it refused", name, err)
		}
	}
	// An error about a request whose URL holds the secret (a webhook's
	// URL is its secret) names the secret, never its value: errors reach
	// job state, logs and consoles.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer down.Close()
	du, _ := url.Parse(down.URL)
	caps = Grants{Transport: &ConnectTo{Routes: []ConnectRoute{{Host: "api.example.com", Target: du}}}}.For(info)
	caps.Secrets.Secret(ctx, "crm/key")
	_, err = caps.HTTPWrite.Do(ctx, "POST", "http://api.example.com/hooks/"+key+"?k="+url.QueryEscape(key), nil, nil)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "[secret crm/key]") || runtime.KindOf(err) != runtime.Transient {
		t.Errorf("an error shows the secret: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.HasPrefix(s, "other.example.com") {
			t.Errorf("other.example.com got %s", s)
		}
	}
}

// TestRegisterRefusesEffectsWeakerThanCapabilities: a node declared Pure
// (the zero value) that holds http.read would be run as Pure (on
// PostgreSQL inside a store transaction) while it reads the network;
// Register refuses it, and takes it declared ReadOnly.
func TestRegisterRefusesEffectsWeakerThanCapabilities(t *testing.T) {
	e := New(nil, Options{})
	node := func(effects runtime.Effects) *runtime.Flow {
		info := runtime.NodeInfo{ID: "t.get", Effects: effects, Capabilities: []string{"http.read"}, Egress: []string{"api.example.com"}}
		return &runtime.Flow{Name: "get-" + effects.String(), Nodes: []*runtime.FlowNode{{Alias: "n", Runner: runtime.Typed(info,
			func(*runtime.Context, noParams, json.RawMessage) (json.RawMessage, error) { return nil, nil })}}}
	}
	err := e.Register(node(runtime.Pure))
	if err == nil || !strings.Contains(err.Error(), "t.get holds capability http.read, which needs effects ReadOnly or stronger, but declares Pure") {
		t.Errorf("Register of a Pure node holding http.read: %v", err)
	}
	if err := e.Register(node(runtime.ReadOnly)); err != nil {
		t.Errorf("Register of a ReadOnly node holding http.read: %v", err)
	}
}

// TestHTTPErrorsLeaveTheQueryOut: an error of the HTTP capability names
// the request's method, host and path, never its query, where an input's
// values travel (an email, a customer id): the error reaches the job's
// state, the console and the logs.
func TestHTTPErrorsLeaveTheQueryOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	h := NewHTTP(nil, []string{u.Hostname()})
	ctx := context.Background()
	_, err := h.Get(ctx, srv.URL+"/v1/invoices?customer=ada%40corp.example&limit=10", nil)
	if err == nil || strings.Contains(err.Error(), "ada") || strings.Contains(err.Error(), "customer") || !strings.Contains(err.Error(), "/v1/invoices?…: 401") {
		t.Errorf("a 401: %v", err)
	}
	srv.Close()
	_, err = h.Get(ctx, srv.URL+"/v1/invoices?customer=ada%40corp.example", nil)
	if err == nil || strings.Contains(err.Error(), "ada") || strings.Contains(err.Error(), "customer") {
		t.Errorf("a refused connection: %v", err)
	}
}
