// Package wire is the protocol between certification's recorder, which
// runs in the certifier's process, and the harness, which runs the
// connector's module inside the sandbox. It is HTTP with JSON bodies over
// the one Unix socket the sandbox can reach.
//
// The harness asks for its work, runs each delivery through the module
// (runtime/wasmhost, as production runs it), and posts each result and
// every attempt the module made to reach what it may not. Every
// capability the module uses is a request to the recorder: HTTP
// exchanges, KV, dedupe, blobs and database statements. The recorder
// answers them from the fixtures and its own state, and counts effects
// itself; nothing the harness says about effects is believed.
package wire

import (
	"encoding/json"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// The recorder's endpoints. Each takes a POST of the request type named
// and answers the response type, except Work (GET).
const (
	PathWork      = "/work"       // GET → Work
	PathResult    = "/result"     // Result → nothing
	PathHTTP      = "/http"       // HTTPRequest → HTTPResponse
	PathKVGet     = "/kv/get"     // KVRequest → KVResponse
	PathKVPut     = "/kv/put"     // KVRequest → nothing
	PathDedupe    = "/dedupe"     // DedupeRequest → DedupeResponse
	PathBlobRead  = "/blob/read"  // BlobRequest → BlobResponse
	PathBlobWrite = "/blob/write" // BlobRequest → nothing
	PathDB        = "/db"         // DBRequest → DBResponse
	PathEvent     = "/event"      // Event → nothing
)

// MaxBody bounds every request and response body on the socket.
const MaxBody = 32 << 20

// Work is what one harness process does.
type Work struct {
	Deliveries []Delivery `json:"deliveries"`
	// Concurrency is how many deliveries run at once (1: in order, each
	// after the previous one's result was posted).
	Concurrency int    `json:"concurrency"`
	Module      Module `json:"module"`
}

// Module is the module a harness runs, and how.
type Module struct {
	// Path is the module file and Cache the compilation cache, as the
	// harness sees them.
	Path  string `json:"path"`
	Cache string `json:"cache"`
	// Node is the connector's declaration, from its spec: what the host
	// lets the module import and call.
	Node runtime.Declaration `json:"node"`
	// FreshInstances runs each delivery in an instance of its own, as if
	// it were the first activation the module ever ran; otherwise the
	// deliveries share a pool of instances, as production's do.
	FreshInstances bool `json:"fresh_instances,omitempty"`
}

// Event is an attempt of the module to reach what it may not, as the
// host reported it (wasmhost.Event).
type Event struct {
	Kind         string `json:"kind"`
	Detail       string `json:"detail"`
	InActivation bool   `json:"in_activation,omitempty"`
	Key          string `json:"key,omitempty"`
}

// Delivery is one activation of the node.
type Delivery struct {
	ID      int             `json:"id"`
	Params  json.RawMessage `json:"params,omitempty"`
	Input   json.RawMessage `json:"input"`
	Key     string          `json:"key"`
	Attempt int             `json:"attempt"`
	// Now is the activation's logical time, which the module's clock
	// reads.
	Now time.Time `json:"now"`
	// Clock is what the clock capability reads as the call begins: later
	// than Now by what production's delivery would have waited (queueing,
	// the retry policy's backoff, a world whose clock moved on). It then
	// moves as a real clock does, by a little at every reading and by a
	// provider's latency at every capability call, drawn from Seed, so
	// that a delivery run again reads the same times. Zero pins the
	// clock capability at Now for the whole call, sleeps included (a
	// fixture records its output at one instant).
	Clock time.Time `json:"clock,omitzero"`
	// Seed seeds the unseeded rng capability for this delivery: numbers
	// differ between deliveries, as production's do, and repeat when a
	// delivery is run again to compare.
	Seed uint64 `json:"seed"`
	// Secrets maps each declared handle to the value it resolves to.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Timeout bounds the delivery.
	Timeout time.Duration `json:"timeout"`
}

// Result is how a delivery ended.
type Result struct {
	ID     int             `json:"id"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Error is a failed delivery's error.
type Error struct {
	Kind       string        `json:"kind"`
	Message    string        `json:"message"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
}

// HTTPRequest is a request the node sent through its HTTP capability.
type HTTPRequest struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header,omitempty"`
	Body   []byte              `json:"body,omitempty"`
	// Clock is what the delivery's clock capability read as the request
	// left (Delivery.Clock), when it moves: the provider's Date follows
	// it, as a live provider's follows the real time.
	Clock time.Time `json:"clock,omitzero"`
	// Delivery is the delivery that sent it (Delivery.ID + 1; 0 when
	// unknown): concurrent copies each get their recording's answers in
	// turn.
	Delivery int `json:"delivery,omitempty"`
}

// HTTPResponse is the provider's answer. Timeout means the provider never
// answers; Refused means the recorder refused the request (its reason),
// which the harness returns as a Permanent error.
type HTTPResponse struct {
	Status  int                 `json:"status,omitempty"`
	Header  map[string][]string `json:"header,omitempty"`
	Body    []byte              `json:"body,omitempty"`
	Timeout bool                `json:"timeout,omitempty"`
	Refused string              `json:"refused,omitempty"`
}

// KVRequest reads or writes one key of the connector's namespace.
type KVRequest struct {
	Key   string `json:"key"`
	Value []byte `json:"value,omitempty"`
}

// KVResponse is a read's answer.
type KVResponse struct {
	Value []byte `json:"value,omitempty"`
	Found bool   `json:"found"`
}

// DedupeRequest records a key for a time.
type DedupeRequest struct {
	Key string        `json:"key"`
	TTL time.Duration `json:"ttl"`
}

// DedupeResponse says whether the key was absent.
type DedupeResponse struct {
	Absent bool `json:"absent"`
}

// BlobRequest reads or writes one blob.
type BlobRequest struct {
	Name string `json:"name"`
	Data []byte `json:"data,omitempty"`
}

// BlobResponse is a read's answer.
type BlobResponse struct {
	Data    []byte `json:"data,omitempty"`
	Missing bool   `json:"missing,omitempty"`
}

// DBRequest is one statement: a query (rows back) or an exec.
type DBRequest struct {
	Exec  bool    `json:"exec,omitempty"`
	Query string  `json:"query"`
	Args  []Value `json:"args,omitempty"`
}

// DBResponse is a statement's answer; Error is the database's message.
type DBResponse struct {
	Columns      []string  `json:"columns,omitempty"`
	Rows         [][]Value `json:"rows,omitempty"`
	RowsAffected int64     `json:"rows_affected,omitempty"`
	Error        string    `json:"error,omitempty"`
}

// Value is one database/sql driver value with its type kept: exactly one
// field is set, or none for NULL.
type Value struct {
	Int    *int64     `json:"i,omitempty"`
	Float  *float64   `json:"f,omitempty"`
	Bool   *bool      `json:"b,omitempty"`
	String *string    `json:"s,omitempty"`
	Bytes  []byte     `json:"y,omitempty"`
	Time   *time.Time `json:"t,omitempty"`
}

// ValueOf wraps a driver value (int64, float64, bool, string, []byte,
// time.Time or nil); ok is false for any other type.
func ValueOf(v any) (Value, bool) {
	switch x := v.(type) {
	case nil:
		return Value{}, true
	case int64:
		return Value{Int: &x}, true
	case float64:
		return Value{Float: &x}, true
	case bool:
		return Value{Bool: &x}, true
	case string:
		return Value{String: &x}, true
	case []byte:
		if x == nil {
			x = []byte{}
		}
		return Value{Bytes: x}, true
	case time.Time:
		return Value{Time: &x}, true
	}
	return Value{}, false
}

// Any returns the driver value.
func (v Value) Any() any {
	switch {
	case v.Int != nil:
		return *v.Int
	case v.Float != nil:
		return *v.Float
	case v.Bool != nil:
		return *v.Bool
	case v.String != nil:
		return *v.String
	case v.Bytes != nil:
		return v.Bytes
	case v.Time != nil:
		return *v.Time
	}
	return nil
}
