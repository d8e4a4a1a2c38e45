package engine

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
)

// Grants builds an activation's capabilities from what its node declares:
// a capability the node does not name stays nil. Set it as
// Options.Capabilities (grants.For).
//
// Every granted value is a narrow type that has exactly the methods of its
// capability interface, whatever backs it: the value behind HTTPRead has
// no Do, the one behind DBRead no ExecContext, the one behind KVRead no
// Put. A node therefore cannot reach a write it did not declare by a type
// assertion on a read capability.
type Grants struct {
	// Store backs KV and dedupe unless KV or Dedupe is set.
	Store store.Store
	// KV, when set, backs kv.read and kv.write instead of Store.
	KV interface {
		runtime.KVReader
		runtime.KVWriter
	}
	// Dedupe, when set, backs dedupe instead of Store. It is one
	// connector's (certification's world): its keys are not namespaced.
	Dedupe runtime.DedupeStore
	// Blobs backs blob read and write (s3blobs for S3-compatible storage);
	// when nil, BlobDir does.
	Blobs interface {
		runtime.BlobReader
		runtime.BlobWriter
	}
	// BlobDir backs blob read and write on local disk.
	BlobDir string
	// Transport carries HTTP; PublicTransport when nil. A transport that
	// traces (telemetry/oteltraces.Transport) makes every request a span
	// under the activation's.
	Transport http.RoundTripper
	// Secrets resolves handles; EnvSecrets when nil.
	Secrets runtime.Secrets
	// DB backs db.read and db.write.
	DB *sql.DB
	// Clock backs clock; SystemClock when nil.
	Clock runtime.Clock
	// RNG backs rng (unseeded); SystemRNG when nil. Certification gives
	// each delivery a generator of its own, so that two runs of one
	// delivery draw alike and can be compared.
	RNG runtime.RNG
	// Seed seeds rng.seeded per activation (mixed with nothing else, so a
	// replay with the same seed draws the same numbers).
	Seed uint64
}

// For returns the capabilities of a node.
func (g Grants) For(info runtime.NodeInfo) runtime.Capabilities {
	has := func(c flowtype.Capability) bool { return slices.Contains(info.Capabilities, string(c)) }
	var caps runtime.Capabilities
	sent := newSentSecrets(info)
	if has(flowtype.HTTPRead) || has(flowtype.HTTPReadPinned) || has(flowtype.HTTPWrite) {
		transport := g.Transport
		if transport == nil {
			transport = PublicTransport
		}
		h := NewHTTP(transport, info.Egress)
		h.secrets = sent
		if has(flowtype.HTTPRead) {
			caps.HTTPRead = httpReader{h}
		}
		if has(flowtype.HTTPReadPinned) {
			caps.HTTPPinned = pinnedReader{h}
		}
		if has(flowtype.HTTPWrite) {
			caps.HTTPWrite = httpWriter{h}
		}
	}
	kv := g.KV
	if kv == nil && g.Store != nil {
		kv = NewStoreKV(g.Store, info.ID)
	}
	if kv != nil && has(flowtype.KVRead) {
		caps.KVRead = kvReader{kv}
	}
	if kv != nil && has(flowtype.KVWrite) {
		caps.KVWrite = kvWriter{kv}
	}
	dedupe := g.Dedupe
	if dedupe == nil && g.Store != nil {
		dedupe = NewStoreDedupe(g.Store, info.ID, nil)
	}
	if dedupe != nil && has(flowtype.Dedupe) {
		caps.Dedupe = dedupeStore{dedupe}
	}
	var blobs interface {
		runtime.BlobReader
		runtime.BlobWriter
	}
	switch {
	case g.Blobs != nil:
		blobs = g.Blobs
	case g.BlobDir != "":
		blobs = &DiskBlobs{dir: g.BlobDir}
	}
	if blobs != nil && (has(flowtype.BlobRead) || has(flowtype.BlobReadHash)) {
		caps.BlobRead = blobReader{blobs}
	}
	if blobs != nil && has(flowtype.BlobWrite) {
		caps.BlobWrite = blobWriter{blobs}
	}
	if g.DB != nil && (has(flowtype.DBRead) || has(flowtype.DBWrite)) {
		caps.DBRead = dbReader{g.DB, g.DB, !has(flowtype.DBWrite)}
	}
	if g.DB != nil && has(flowtype.DBWrite) {
		caps.DBWrite = dbWriter{g.DB}
	}
	if has(flowtype.Clock) {
		caps.Clock = clock{g.Clock}
		if g.Clock == nil {
			caps.Clock = clock{SystemClock{}}
		}
	}
	if has(flowtype.RNG) {
		caps.RNG = g.RNG
		if g.RNG == nil {
			caps.RNG = SystemRNG{}
		}
	}
	if has(flowtype.RNGSeeded) {
		caps.RNG = NewSeededRNG(g.Seed)
	}
	if has(flowtype.Secrets) {
		backend := g.Secrets
		if backend == nil {
			backend = EnvSecrets{}
		}
		caps.Secrets = secrets{backend, info.ID, info.Secrets, sent}
	}
	return caps
}

// The narrow capability types: each holds its backend in an unexported
// field and has only its interface's methods.
type (
	httpReader   struct{ h *HTTP }
	pinnedReader struct{ h *HTTP }
	httpWriter   struct{ h *HTTP }
	kvReader     struct{ b runtime.KVReader }
	kvWriter     struct{ b runtime.KVWriter }
	dedupeStore  struct{ b runtime.DedupeStore }
	blobReader   struct{ b runtime.BlobReader }
	blobWriter   struct{ b runtime.BlobWriter }
	dbReader     struct {
		b        runtime.DBReader
		db       *sql.DB
		readOnly bool
	}
	dbWriter struct{ b runtime.DBWriter }
	clock    struct{ b runtime.Clock }
	secrets  struct {
		b         runtime.Secrets
		connector string
		handles   []string
		sent      *sentSecrets
	}
)

func (c httpReader) Get(ctx context.Context, url string, header http.Header) (*runtime.HTTPResponse, error) {
	return c.h.Get(ctx, url, header)
}

func (c pinnedReader) GetPinned(ctx context.Context, url, pin string, header http.Header) (*runtime.HTTPResponse, error) {
	return c.h.GetPinned(ctx, url, pin, header)
}

func (c httpWriter) Do(ctx context.Context, method, url string, header http.Header, body []byte) (*runtime.HTTPResponse, error) {
	return c.h.Do(ctx, method, url, header, body)
}

func (c kvReader) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return c.b.Get(ctx, key)
}

func (c kvWriter) Put(ctx context.Context, key string, value []byte) error {
	return c.b.Put(ctx, key, value)
}

func (c dedupeStore) PutIfAbsent(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return c.b.PutIfAbsent(ctx, key, ttl)
}

func (c blobReader) ReadBlob(ctx context.Context, name string) ([]byte, error) {
	return c.b.ReadBlob(ctx, name)
}

func (c blobWriter) WriteBlob(ctx context.Context, name string, data []byte) error {
	return c.b.WriteBlob(ctx, name, data)
}

// queryRows is the engine's wasmhost.QueryRowsFunc: the queries of a
// confined connector that may only read run one statement each, in a
// read-only transaction, so that a statement that would write fails
// however it is phrased.
func queryRows(ctx context.Context, db runtime.DBReader, query string, args ...any) ([]string, [][]any, error) {
	c, ok := db.(dbReader)
	if !ok || !c.readOnly {
		return wasmhost.QueryRows(ctx, db, query, args...)
	}
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	// A prepared statement is one statement (PostgreSQL refuses to
	// prepare several), so the query cannot end the transaction and go on
	// outside it ("COMMIT; DELETE ...").
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	defer stmt.Close()
	rs, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	return wasmhost.ScanAll(rs)
}

func (c dbReader) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.b.QueryContext(ctx, query, args...)
}

func (c dbWriter) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.b.ExecContext(ctx, query, args...)
}

func (c clock) Now() time.Time { return c.b.Now() }

// Secret resolves handle when the connector declares it, and refuses
// every other handle (another team's secret, say) without asking the
// backend.
func (c secrets) Secret(ctx context.Context, handle string) (string, error) {
	if !slices.Contains(c.handles, handle) {
		return "", runtime.Errorf(runtime.PolicyDenied, "secret handle %q: %s declares no such secret", handle, c.connector)
	}
	v, err := c.b.Secret(ctx, handle)
	if err == nil {
		c.sent.add(handle, v)
	}
	return v, err
}
