package runtype

import (
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// RetryPolicy says how the orchestrator retries a failed activation. The
// zero value means one attempt.
type RetryPolicy struct {
	InitialInterval    time.Duration
	BackoffCoefficient float64
	MaxInterval        time.Duration
	MaxAttempts        int
	// NonRetryable kinds fail the activation at once. Permanent,
	// SchemaMismatch and PolicyDenied never retry whatever the list says.
	NonRetryable []flowtype.ErrorKind
}

// Backoff returns the delay before attempt (2 for the first retry).
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	d := float64(p.InitialInterval)
	coef := p.BackoffCoefficient
	if coef < 1 {
		coef = 1
	}
	for i := 2; i < attempt; i++ {
		d *= coef
		if p.MaxInterval > 0 && d >= float64(p.MaxInterval) {
			return p.MaxInterval
		}
	}
	if p.MaxInterval > 0 && time.Duration(d) > p.MaxInterval {
		return p.MaxInterval
	}
	return time.Duration(d)
}

// Retryable reports whether an error of kind may be retried after attempt
// attempts.
func (p RetryPolicy) Retryable(kind flowtype.ErrorKind, attempt int) bool {
	if attempt >= max(p.MaxAttempts, 1) {
		return false
	}
	switch kind {
	case flowtype.Permanent, flowtype.SchemaMismatch, flowtype.PolicyDenied:
		return false
	}
	for _, k := range p.NonRetryable {
		if k == kind {
			return false
		}
	}
	return true
}

// Cache is a connector's result cache: the input fields that key an
// output, and how long it is reused (zero: for good).
type Cache struct {
	Key []string
	TTL time.Duration
}

// RateLimit is a token bucket: QPS tokens a second, at most Burst at once
// (at least 1, and QPS rounded up when Burst is 0). The zero value is no
// limit.
type RateLimit struct {
	QPS   float64
	Burst int
}

// NodeInfo is what the runtime needs to know about a connector; generated
// code fills it from the spec.
type NodeInfo struct {
	ID          string
	Version     string
	Effects     flowtype.Effects
	Determinism flowtype.Determinism
	RetryOwner  flowtype.RetryOwner
	Retry       RetryPolicy
	// KeySchema names the idempotency key schema (id@major); KeyFields are
	// the input fields that form the key, in spec order.
	KeySchema string
	KeyFields []string
	// KeyScope is what a key is unique within: the node (the default),
	// each incoming edge, or each partition of the incoming edge (KeyNode).
	KeyScope flowtype.IdemScope
	// Capabilities names what the node may use (flowtype capability
	// names: "http.read", "kv.write", ...); only these are granted.
	Capabilities []string
	// Egress is the host allowlist for network capabilities.
	Egress []string
	// Secrets are the secret handles the node may resolve: an engine's
	// Secrets capability resolves these and refuses every other handle.
	Secrets []string
	// SecretHosts are, per handle, the egress entries its value may be
	// sent to: a request to another host that carries it is refused. A
	// handle without entries may go to the node's egress when it has
	// exactly one entry (a spec's default), and nowhere otherwise.
	SecretHosts map[string][]string
	// Timeout bounds one attempt; zero means the engine default.
	Timeout time.Duration
	// HeartbeatTimeout, when set, is the longest an attempt may go without
	// a heartbeat: past it the attempt is cancelled and fails as a
	// Transient timeout (retried by policy), long before the job's lease
	// would run out. Zero: no heartbeat is required.
	HeartbeatTimeout time.Duration
	// RateLimit, when set, bounds the calls of every node of this
	// connector across all workers of the store (a token bucket kept in
	// the store): a call beyond it waits, its message handed back without
	// spending an attempt.
	RateLimit RateLimit
	// Cache, when its Key is set, memoises the connector's successful
	// outputs in the store, keyed by the connector, its version and the
	// Key fields of the input (a Stable connector's pins among them).
	Cache Cache
	// Redact, when set, removes the values whose data class is not public
	// from a decoding or validation error of part ("params", "input" or
	// "output") before the error reaches job state and logs. Generated
	// nodes set it from their data-class table.
	Redact func(part string, err error) error
	// DataClass, when set, returns the x-data-class declared at path
	// ("a.b", "items[]") of part ("params", "input" or "output"), or its
	// nearest declared ancestor's; "" when none is. Generated nodes set it
	// from their data-class table; the web console masks what it calls
	// Sensitive.
	DataClass func(part, path string) string
}

// KeyNode is the node name an activation's idempotency key is computed
// under (the canonical key's node; generated IdempotencyKey functions take
// it): the node's alias for ScopeNode; with ScopeEdge, the alias and the
// edge the activation arrived on, via ("from.port", the forEach alias for
// its body, empty for an entry node); with ScopePartition, also partition,
// the JSON of the incoming edge's partition key field in the input (empty
// when the edge declares none). So keys of one node are unique per node,
// per edge or per partition, as the connector's idempotency scope says.
func KeyNode(alias string, scope flowtype.IdemScope, via, partition string) string {
	switch scope {
	case flowtype.ScopeEdge:
		return alias + "<" + via
	case flowtype.ScopePartition:
		return alias + "<" + via + "|" + partition
	}
	return alias
}
