package runtime

import (
	"context"
	"encoding/hex"
	"time"
)

// Context is what one activation of a node runs with: cancellation (the
// embedded context, cancelled on kill, timeout or shutdown), its canonical
// idempotency key, a heartbeat, and the capabilities the node's spec
// declares. Generated code wraps it in a per-connector type that exposes
// only those capabilities.
type Context struct {
	context.Context
	key       string
	attempt   int
	caps      Capabilities
	heartbeat HeartbeatCounter
	at        time.Time
}

// HeartbeatCounter counts an activation's heartbeats: the engine reads it
// to renew the job's lease (*atomic.Int64 is one), and a confined
// connector's counter tells its host.
type HeartbeatCounter interface{ Add(delta int64) int64 }

// IdempotencyKey is the activation's canonical key (lowercase hex BLAKE3 of
// the key fields); pass it to external APIs (an Idempotency-Key header) so
// a retried call is recognised. Empty for nodes that declare no key.
func (c *Context) IdempotencyKey() string { return c.key }

// IdempotencyUUID is the key in the form of an RFC 9562 UUID, for
// providers that want their idempotency keys as UUIDs: the key's first 16
// bytes with the version (8, vendor-specific) and variant bits set, so
// distinct keys give distinct UUIDs (122 bits of the key) and
// certification recognises it as the key. Empty for nodes that declare no
// key.
func (c *Context) IdempotencyUUID() string {
	if len(c.key) < 32 {
		return ""
	}
	var b [16]byte
	if _, err := hex.Decode(b[:], []byte(c.key[:32])); err != nil {
		return ""
	}
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Attempt is 1 on the first try of the activation and counts retries.
func (c *Context) Attempt() int { return c.attempt }

// Heartbeat tells the engine the node is alive: a node that declares a
// heartbeat timeout has its call cancelled when it goes longer without one.
// (The engine keeps the job's lease while the call runs, up to its
// timeout, heartbeat or not.)
func (c *Context) Heartbeat() {
	if c.heartbeat != nil {
		c.heartbeat.Add(1)
	}
}

// Caps returns the capabilities the runtime granted this activation. Only
// those the node's spec declares are non-nil; generated context types
// expose them by name so that undeclared ones do not compile.
func (c *Context) Caps() Capabilities { return c.caps }

// NewContext builds a Context for running a node outside the engine: tests,
// fixtures and certification replays. Its Heartbeat does nothing.
func NewContext(ctx context.Context, key string, attempt int, caps Capabilities) *Context {
	return &Context{Context: ctx, key: key, attempt: attempt, caps: caps}
}

// NewActivationContext is the Context the engine gives an activation:
// NewContext whose Heartbeat adds one to heartbeat, and whose logical
// time is at.
func NewActivationContext(ctx context.Context, key string, attempt int, caps Capabilities, heartbeat HeartbeatCounter, at time.Time) *Context {
	if k, ok := caps.RNG.(KeyedRNG); ok && key != "" {
		caps.RNG = k.ForKey(key)
	}
	return &Context{Context: ctx, key: key, attempt: attempt, caps: caps, heartbeat: heartbeat, at: at}
}

// LogicalTime is the activation's logical time: when the engine published
// the activation, the same on every attempt and every replay of it. A
// confined connector's clock reads it (runtime/wasmhost); zero for a
// Context made by NewContext.
func (c *Context) LogicalTime() time.Time { return c.at }
