package runtime

import (
	"context"
	"database/sql"
	"net/http"
	"time"
)

// Capabilities is the set of capabilities an activation holds; fields the
// node's spec does not declare are nil.
type Capabilities struct {
	HTTPRead   HTTPReader
	HTTPPinned PinnedHTTPReader
	HTTPWrite  HTTPWriter
	KVRead     KVReader
	KVWrite    KVWriter
	BlobRead   BlobReader
	BlobWrite  BlobWriter
	DBRead     DBReader
	DBWrite    DBWriter
	Dedupe     DedupeStore
	Clock      Clock
	RNG        RNG
	Secrets    Secrets
}

// HTTPResponse is a fully read HTTP response.
type HTTPResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// HTTPReader performs safe (GET) requests to allowed hosts.
type HTTPReader interface {
	Get(ctx context.Context, url string, header http.Header) (*HTTPResponse, error)
}

// PinnedHTTPReader reads a resource pinned by its ETag or content hash; a
// response whose ETag differs from the pin fails, so replays read the same
// bytes or nothing.
type PinnedHTTPReader interface {
	GetPinned(ctx context.Context, url, pin string, header http.Header) (*HTTPResponse, error)
}

// HTTPWriter performs requests with effects to allowed hosts.
type HTTPWriter interface {
	Do(ctx context.Context, method, url string, header http.Header, body []byte) (*HTTPResponse, error)
}

// KVReader reads the connector's namespace of the job store.
type KVReader interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// KVWriter writes the connector's namespace of the job store.
type KVWriter interface {
	Put(ctx context.Context, key string, value []byte) error
}

// BlobReader reads blobs by name.
type BlobReader interface {
	ReadBlob(ctx context.Context, name string) ([]byte, error)
}

// BlobWriter writes blobs; writing a name replaces its content atomically.
type BlobWriter interface {
	WriteBlob(ctx context.Context, name string, data []byte) error
}

// DedupeStore remembers keys for a time.
type DedupeStore interface {
	// PutIfAbsent records key for ttl and reports whether it was absent
	// (true: first time, go ahead).
	PutIfAbsent(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Clock tells the time; a BestEffort capability.
type Clock interface{ Now() time.Time }

// RNG gives random numbers; seeded (Strict) or not (BestEffort).
type RNG interface{ Uint64() uint64 }

// KeyedRNG is a seeded RNG that draws, for each activation, from a
// sequence of its own that follows from the activation's idempotency key:
// the same key draws the same numbers on every attempt and replay, and
// no two keys share a sequence. NewActivationContext asks it for the
// activation's generator.
type KeyedRNG interface {
	RNG
	ForKey(key string) RNG
}

// Secrets resolves secret handles to values at call time; values never
// appear in specs, flows, logs or job state.
type Secrets interface {
	Secret(ctx context.Context, handle string) (string, error)
}

// DBReader queries the database the connector is bound to; *sql.DB
// implements it.
type DBReader interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// DBWriter changes the database the connector is bound to; *sql.DB
// implements it.
type DBWriter interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// NotGranted is the error a generated context returns when a capability
// the spec declares was not granted to the activation (the engine was not
// configured with what backs it): PolicyDenied, naming the capability.
func NotGranted(capability string) error {
	return Errorf(PolicyDenied, "capability %s is declared but was not granted to this activation; configure engine.Grants with what backs it", capability)
}
