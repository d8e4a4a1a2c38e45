// Package flowtype holds the small vocabulary every other flowgen package
// shares: the effects and determinism lattices, delivery and retry semantics,
// error kinds, durations and the capability catalogue. It has no dependencies
// beyond the standard library so that generated code, the runtime, the
// formats and the registry can all import it.
//
// Every enum encodes as text (its name, as written in ConnectorSpec and Flow IR
// files) and its zero value is the documented default.
package flowtype

import (
	"fmt"
	"slices"
	"strings"
)

// enumName returns names[v], or a placeholder for out-of-range values.
func enumName[T ~int](names []string, v T) string {
	if int(v) >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("invalid(%d)", int(v))
}

// parseEnum sets *dst to the index of text in names, or explains which values
// are accepted.
func parseEnum[T ~int](names []string, what string, text []byte, dst *T) error {
	s := string(text)
	for i, n := range names {
		if n == s {
			*dst = T(i)
			return nil
		}
	}
	if n, ok := Closest(s, names); ok {
		return fmt.Errorf("invalid %s %q: did you mean %q? (want one of %s)", what, s, n, strings.Join(names, ", "))
	}
	return fmt.Errorf("invalid %s %q: want one of %s", what, s, strings.Join(names, ", "))
}

// Effects is what a node may do to the world: Pure < ReadOnly < Effectful.
// The zero value is Pure.
type Effects int

const (
	// Pure nodes compute outputs from inputs only; they perform no I/O.
	Pure Effects = iota
	// ReadOnly nodes may read external state but never change it.
	ReadOnly
	// Effectful nodes change external state and need an idempotency key.
	Effectful
)

var effectsNames = []string{"Pure", "ReadOnly", "Effectful"}

func (e Effects) String() string                { return enumName(effectsNames, e) }
func (e Effects) MarshalText() ([]byte, error)  { return []byte(e.String()), nil }
func (e *Effects) UnmarshalText(b []byte) error { return parseEnum(effectsNames, "effects", b, e) }

// EnumValues lists the accepted spellings, for schemas and help texts.
func (Effects) EnumValues() []string { return effectsNames }

// Determinism is how reproducible a node's output is:
// Strict < Stable < BestEffort < Nondeterministic. The zero value is Strict.
type Determinism int

const (
	// Strict output is a function of the inputs alone, byte for byte.
	Strict Determinism = iota
	// Stable output is reproducible given pinned external resources.
	Stable
	// BestEffort output may vary between runs (unpinned reads, clocks).
	BestEffort
	// Nondeterministic output varies by design (unseeded randomness).
	Nondeterministic
)

var determinismNames = []string{"Strict", "Stable", "BestEffort", "Nondeterministic"}

func (d Determinism) String() string               { return enumName(determinismNames, d) }
func (d Determinism) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
func (d *Determinism) UnmarshalText(b []byte) error {
	return parseEnum(determinismNames, "determinism", b, d)
}

// EnumValues lists the accepted spellings, for schemas and help texts.
func (Determinism) EnumValues() []string { return determinismNames }

// Delivery is an edge's delivery guarantee. The zero value is AtLeastOnce.
type Delivery int

const (
	// AtLeastOnce redelivers until acknowledged; sinks must deduplicate.
	AtLeastOnce Delivery = iota
	// AtMostOnce never redelivers; a message may be lost.
	AtMostOnce
	// ExactlyOnce needs a bound dedupe store and an idempotent sink.
	ExactlyOnce
)

var deliveryNames = []string{"AtLeastOnce", "AtMostOnce", "ExactlyOnce"}

func (d Delivery) String() string                { return enumName(deliveryNames, d) }
func (d Delivery) MarshalText() ([]byte, error)  { return []byte(d.String()), nil }
func (d *Delivery) UnmarshalText(b []byte) error { return parseEnum(deliveryNames, "delivery", b, d) }

// EnumValues lists the accepted spellings, for schemas and help texts.
func (Delivery) EnumValues() []string { return deliveryNames }

// Ordering is the ordering contract an edge declares. The zero value is
// Ordered. The declaration is validated and carried into the generated
// code, but the runtime does not enforce it yet: activations on any edge
// may run in parallel and in any order (docs/runtime.md, "Ordering").
type Ordering int

const (
	// Ordered declares that deliveries should be FIFO per edge and
	// partition key (declared, not yet enforced).
	Ordered Ordering = iota
	// Unordered declares that parallel delivery in any order is fine.
	Unordered
)

var orderingNames = []string{"Ordered", "Unordered"}

func (o Ordering) String() string                { return enumName(orderingNames, o) }
func (o Ordering) MarshalText() ([]byte, error)  { return []byte(o.String()), nil }
func (o *Ordering) UnmarshalText(b []byte) error { return parseEnum(orderingNames, "ordering", b, o) }

// EnumValues lists the accepted spellings, for schemas and help texts.
func (Ordering) EnumValues() []string { return orderingNames }

// RetryOwner says which single layer retries a failed call. The zero value is
// RetryNone.
type RetryOwner int

const (
	// RetryNone means nobody retries: a failure is final.
	RetryNone RetryOwner = iota
	// RetryConnector means the connector retries inside its own call.
	RetryConnector
	// RetryOrchestrator means the runtime re-runs the call per the policy.
	RetryOrchestrator
)

var retryOwnerNames = []string{"none", "connector", "orchestrator"}

func (r RetryOwner) String() string               { return enumName(retryOwnerNames, r) }
func (r RetryOwner) MarshalText() ([]byte, error) { return []byte(r.String()), nil }
func (r *RetryOwner) UnmarshalText(b []byte) error {
	return parseEnum(retryOwnerNames, "retry owner", b, r)
}

// EnumValues lists the accepted spellings, for schemas and help texts.
func (RetryOwner) EnumValues() []string { return retryOwnerNames }

// ErrorKind classifies a failed call; retry policies act on it. The zero value
// is Transient.
type ErrorKind int

const (
	// Transient failures may succeed when retried (5xx, timeouts).
	Transient ErrorKind = iota
	// Auth failures need new credentials (401, 403).
	Auth
	// RateLimited failures should be retried after the indicated delay (429).
	RateLimited
	// Permanent failures never succeed on retry (4xx other than the above).
	Permanent
	// SchemaMismatch means data did not match the declared port schema.
	SchemaMismatch
	// PolicyDenied means a policy (egress, scopes, budget) refused the call.
	PolicyDenied
)

var errorKindNames = []string{"Transient", "Auth", "RateLimited", "Permanent", "SchemaMismatch", "PolicyDenied"}

func (k ErrorKind) String() string               { return enumName(errorKindNames, k) }
func (k ErrorKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
func (k *ErrorKind) UnmarshalText(b []byte) error {
	return parseEnum(errorKindNames, "error kind", b, k)
}

// EnumValues lists the accepted spellings, for schemas and help texts.
func (ErrorKind) EnumValues() []string { return errorKindNames }

// IdemScope is what an idempotency key is unique within. The zero value is
// ScopeNode.
type IdemScope int

const (
	// ScopeNode keys are unique per node.
	ScopeNode IdemScope = iota
	// ScopeEdge keys are unique per incoming edge.
	ScopeEdge
	// ScopePartition keys are unique per partition of the incoming edge.
	ScopePartition
)

var idemScopeNames = []string{"Node", "Edge", "Partition"}

func (s IdemScope) String() string               { return enumName(idemScopeNames, s) }
func (s IdemScope) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
func (s *IdemScope) UnmarshalText(b []byte) error {
	return parseEnum(idemScopeNames, "idempotency scope", b, s)
}

// EnumValues lists the accepted spellings, for schemas and help texts.
func (IdemScope) EnumValues() []string { return idemScopeNames }

// KindsForResponse lists the error kinds a provider answer may map to under
// the error taxonomy: 401 Auth; 403 Auth or PolicyDenied; 429 RateLimited;
// 408, 5xx and a request that times out (timeout true) Transient; any other
// 4xx Permanent or SchemaMismatch. An error answer that says when to come
// back (retryAfter: a Retry-After header) may also be RateLimited, as
// providers throttle with 403 (GitHub's secondary rate limits) and 503
// too. Statuses below 400 say nothing about the error (a provider may
// report failure in a 200 body), so they give nil, as does a status
// outside 100-599.
func KindsForResponse(status int, timeout, retryAfter bool) []ErrorKind {
	kinds := kindsForStatus(status, timeout)
	if retryAfter && !timeout && len(kinds) > 0 && !slices.Contains(kinds, RateLimited) {
		kinds = append(kinds, RateLimited)
	}
	return kinds
}

func kindsForStatus(status int, timeout bool) []ErrorKind {
	switch {
	case timeout:
		return []ErrorKind{Transient}
	case status < 400 || status > 599:
		return nil
	case status == 401:
		return []ErrorKind{Auth}
	case status == 403:
		return []ErrorKind{Auth, PolicyDenied}
	case status == 429:
		return []ErrorKind{RateLimited}
	case status == 408 || status >= 500:
		return []ErrorKind{Transient}
	default:
		return []ErrorKind{Permanent, SchemaMismatch}
	}
}
