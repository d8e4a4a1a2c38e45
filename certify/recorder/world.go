// Package recorder is certification's side of the sandbox socket: it
// plays every provider and store a connector's capabilities reach (HTTP
// answered from the fixtures, KV, dedupe, blobs, a fixture database), and
// records what the connector did to them, in the certifier's process where
// the connector's code cannot reach.
//
// A [World] is the outside world for one check: the state deliveries act
// on and the effects they had, counted per idempotency key. A [Session] is
// one harness process's conversation with a world: the deliveries it runs,
// how the provider answers (the strict, in-order recording of each fixture,
// or any recorded exchange to the same target, for duplicates), and the
// results it reported.
package recorder

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// Request is one HTTP request a connector sent.
type Request struct {
	// Delivery is the session's delivery it is attributed to, and Key that
	// delivery's idempotency key.
	Delivery int
	Key      string
	Method   string
	URL      string
	// Host is the target connected to: host:port (flowtype.TargetOf).
	Host   string
	Header http.Header
	Body   []byte
	// Token is true for a token request (World.Token), Write for any
	// other request that is not safe (httpfixture.Safe).
	Token, Write bool
	// Effect is true when it changed the provider (httpfixture.Provider).
	Effect bool
}

// World is the state deliveries act on and what they did to it. It is
// safe for concurrent use.
type World struct {
	// Allowed reports whether the connector's egress allowlist admits a
	// target, host:port as flowtype.TargetOf gives.
	Allowed func(hostport string) bool
	// ReadOnly marks a connector that may not write: every write it sends
	// is a violation.
	ReadOnly bool
	// DB backs the db capabilities; nil when the connector has none.
	DB *FixtureDB
	// Contract is where the provider deduplicates writes (the spec's
	// idempotency.providerDedupe); nil is httpfixture.DefaultContract.
	Contract []httpfixture.Dedupe
	// CarriesKey reports whether a dedupe value a delivery's write
	// carries (httpfixture.Provider.Read: its value, with its rule: the index
	// of the Contract endpoint, -1 for the default) is bound to the
	// delivery's key and input; a write whose value is not is a
	// violation: two keys could share it, and the provider would take one
	// key's effect for the other's duplicate. Nil accepts any value.
	CarriesKey func(key string, input []byte, value string, rule int) bool
	// Token is the provider's token endpoint (the spec's auth): a token
	// request there is a read, and rewriting the token cache in KV with
	// a token the endpoint issued is not an effect (any other value
	// there is).
	Token httpfixture.TokenEndpoint

	mu         sync.Mutex
	provider   httpfixture.Provider
	kv         map[string][]byte
	blobs      map[string][]byte
	dedupe     map[string]time.Time
	now        time.Time
	effects    map[string]int
	requests   []Request
	violations []string
	// resources are what the provider holds at a URL after a PUT (a
	// JSON merge patch applies to it): later reads see earlier writes.
	resources map[string][]byte
	// dedupeOwner is the key that first sent each dedupe value.
	dedupeOwner map[string]string
	// tokens are the access tokens the token endpoint issued; fresh
	// counts, per key, the tokens its deliveries were issued and have
	// not yet cached.
	tokens []string
	fresh  map[string]int
}

// NewWorld returns an untouched world whose clock reads now.
func NewWorld(now time.Time, allowed func(string) bool) *World {
	return &World{Allowed: allowed, now: now, kv: map[string][]byte{}, blobs: map[string][]byte{},
		dedupe: map[string]time.Time{}, effects: map[string]int{}}
}

// SetNow moves the world's clock, which dedupe TTLs follow.
func (w *World) SetNow(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = t
}

// clock is what the world's clock reads.
func (w *World) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// Reset forgets the state (not the effects, requests or violations
// recorded): the provider, KV, blobs, dedupe and the database start again.
func (w *World) Reset(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.provider = httpfixture.Provider{}
	w.kv, w.blobs, w.dedupe = map[string][]byte{}, map[string][]byte{}, map[string]time.Time{}
	w.resources, w.tokens, w.fresh = nil, nil, nil
	if w.DB != nil {
		return w.DB.Reset(ctx)
	}
	return nil
}

// Effects returns the effects counted so far per idempotency key.
func (w *World) Effects() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.effects))
	for k, v := range w.effects {
		out[k] = v
	}
	return out
}

// Requests returns every HTTP request seen, in order.
func (w *World) Requests() []Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.requests)
}

// Violations lists what the connector did that it may never do (egress
// outside the allowlist, writes from a read-only connector), in order.
func (w *World) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

func (w *World) violate(msg string) {
	w.violations = append(w.violations, msg)
}

func (w *World) effect(key string) { w.effects[key]++ }

// record records a request attributed to delivery (key) that the
// provider refuses, so changes nothing, and reports whether it may be
// answered: false for egress violations.
func (w *World) record(delivery int, key string, req *Request) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	allowed := w.check(delivery, key, req)
	w.requests = append(w.requests, *req)
	return allowed
}

// check judges a request, noting the violations it is; the caller holds
// w.mu and records it.
func (w *World) check(delivery int, key string, req *Request) bool {
	req.Delivery, req.Key = delivery, key
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		w.violate("request to an invalid URL " + req.URL)
		return false
	}
	req.Host = flowtype.TargetOf(u)
	req.Token = w.Token.Asks(req.Method, req.URL, req.Header, req.Body)
	req.Write = !httpfixture.Safe(req.Method, req.Header) && !req.Token
	allowed := w.Allowed == nil || w.Allowed(req.Host)
	if !allowed {
		w.violate("request to " + req.Host + " (" + req.Method + " " + req.URL + "), which is not in the egress allowlist")
	}
	if req.Write && w.ReadOnly {
		w.violate("a write (" + httpfixture.Method(req.Method, req.Header) + " " + req.URL + ") from a connector that may only read")
	}
	return allowed
}

// http records a request attributed to delivery (key), applies it to the
// provider, and reports whether it may be answered: false for egress
// violations.
func (w *World) http(delivery int, key string, input []byte, req *Request) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	allowed := w.check(delivery, key, req)
	if allowed && req.Write {
		w.provider.Contract = w.Contract
		read := w.provider.Read(req.Method, req.URL, req.Header, req.Body)
		if req.Write && w.CarriesKey != nil && read.Ambiguity != "" {
			w.violate(fmt.Sprintf("a write to %s names its dedupe value ambiguously: %s; the provider may read another value than the one meant, so each copy of it counts as a new effect", req.Host, read.Ambiguity))
		}
		if v, on, rule := read.Value, read.On, read.Rule; req.Write && v != "" && w.CarriesKey != nil {
			u, _ := url.Parse(req.URL)
			if !w.CarriesKey(key, input, v, rule) {
				w.violate(fmt.Sprintf("a write to %s%s is deduplicated on its %s, a %d-character value that carries neither the activation's key nor its key fields: inputs with different keys can share it, and the provider would take one's effect for a duplicate of the other's; send ctx.IdempotencyKey() (whole, or at least 32 of its characters), or ctx.IdempotencyUUID() where the provider wants a UUID, or a name-based UUID of the whole key that the endpoint declares (providerDedupe uuid)", req.Host, u.Path, on, len(v)))
			}
			// One value, one key: a value another key sent first makes
			// the provider take this write for a repeat of that one.
			if w.dedupeOwner == nil {
				w.dedupeOwner = map[string]string{}
			}
			if owner, ok := w.dedupeOwner[v]; ok && owner != key {
				w.violate(fmt.Sprintf("a write to %s%s is deduplicated on its %s, a value that an activation with another key sent too: the provider takes the second for a repeat of the first, and one effect is lost (the value must tell every key apart)", req.Host, u.Path, on))
			} else if !ok {
				w.dedupeOwner[v] = key
			}
		}
		req.Effect = w.provider.ApplyRead(req.Method, req.URL, req.Header, req.Body, read)
		if req.Effect {
			w.effect(key)
		}
		w.hold(req)
	}
	w.requests = append(w.requests, *req)
	return allowed
}

func (w *World) kvGet(key string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.kv[key]
	return v, ok
}

func (w *World) kvPut(attribution, key string, value []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ReadOnly {
		w.violate("a KV write (" + key + ") from a connector that may only read")
	}
	if old, ok := w.kv[key]; !ok || !bytes.Equal(old, value) {
		w.kv[key] = bytes.Clone(value)
		// Caching a token is no effect once per token issued: state
		// kept beside the token, rewritten on every activation, is.
		if w.Token.Caches(key) && w.fresh[attribution] > 0 && w.holdsToken(value) {
			w.fresh[attribution]--
		} else {
			w.effect(attribution)
		}
	}
}

// issued notes the access token in a token endpoint's answer to a
// delivery of key.
func (w *World) issued(key string, body []byte) {
	var answer struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(body, &answer) != nil || answer.AccessToken == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.tokens, answer.AccessToken) {
		w.tokens = append(w.tokens, answer.AccessToken)
	}
	if w.fresh == nil {
		w.fresh = map[string]int{}
	}
	w.fresh[key]++
}

// holdsToken reports whether value holds an access token the token
// endpoint issued, as a token cache does; the caller holds w.mu.
func (w *World) holdsToken(value []byte) bool {
	return slices.ContainsFunc(w.tokens, func(t string) bool { return bytes.Contains(value, []byte(t)) })
}

func (w *World) putIfAbsent(key string, ttl time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if exp, ok := w.dedupe[key]; ok && exp.After(w.now) {
		return false
	}
	w.dedupe[key] = w.now.Add(ttl)
	return true
}

func (w *World) blobRead(name string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.blobs[name]
	return v, ok
}

func (w *World) blobWrite(attribution, name string, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ReadOnly {
		w.violate("a blob write (" + name + ") from a connector that may only read")
	}
	if old, ok := w.blobs[name]; !ok || !bytes.Equal(old, data) {
		w.blobs[name] = bytes.Clone(data)
		w.effect(attribution)
	}
}

// hold keeps what a write leaves at its URL: a PUT's body, or a PATCH's
// JSON merge patch (RFC 7396) applied to what is there.
func (w *World) hold(req *Request) {
	if httpfixture.Overridden(req.Header) {
		return
	}
	switch req.Method {
	case http.MethodPut:
	case http.MethodPatch:
		var doc, patch any
		if json.Unmarshal(w.resources[req.URL], &doc) != nil || json.Unmarshal(req.Body, &patch) != nil {
			return
		}
		merged, err := json.Marshal(httpfixture.MergePatch(doc, patch))
		if err != nil {
			return
		}
		req = &Request{Body: merged, URL: req.URL}
	case http.MethodDelete:
		delete(w.resources, req.URL)
		return
	default:
		return
	}
	if w.resources == nil {
		w.resources = map[string][]byte{}
	}
	w.resources[req.URL] = bytes.Clone(req.Body)
}

// held returns what a write left at url, if any.
func (w *World) held(url string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.resources[url]
	return b, ok
}

// liveHeaders adds what every live provider's answer carries and a
// recording may leave out (Date at the request's clock, or the world's,
// Content-Length, a JSON body's Content-Type), so that an answer's
// headers do not tell the recorder from a provider.
func (w *World) liveHeaders(h map[string][]string, body []byte, sent time.Time) {
	now := sent
	if now.IsZero() {
		now = w.clock()
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{now.UTC().Format(http.TimeFormat)}
	}
	if _, ok := h["Content-Length"]; !ok {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	if _, ok := h["Content-Type"]; !ok && len(body) > 0 && json.Valid(body) {
		h["Content-Type"] = []string{"application/json"}
	}
}
