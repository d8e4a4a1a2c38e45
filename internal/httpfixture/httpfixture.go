// Package httpfixture reads a connector's fixtures from its manifest (the
// generated Manifest(), the spec as canonical JSON) and decides whether a
// request the connector made is the one a fixture recorded. The author's
// fixture tests (runtime/fixturetest) and certification's recorder use it,
// so both judge a request the same way.
package httpfixture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// Manifest is the part of a connector's manifest that fixtures need.
type Manifest struct {
	Fixtures []Fixture
	// Secrets are the declared secrets, with the shape of their values.
	Secrets []struct {
		Handle string
		Format *struct {
			Prefix, Alphabet string
			Length           int
		}
	}
	Idempotency *struct {
		TTL flowtype.Duration
		// ProviderDedupe is the provider's contract, as the spec
		// declares it: where it deduplicates writes, and on what.
		ProviderDedupe []Dedupe
	}
	FixtureEnv *struct {
		Secrets  map[string]string
		Database *struct{ Setup string }
	}
	// Auth is the provider's token endpoint, as the spec declares it.
	Auth *struct{ TokenURL, TokenCache string }
}

// Token is the declared token endpoint (the zero value when the spec
// declares none).
func (m *Manifest) Token() TokenEndpoint {
	if m.Auth == nil {
		return TokenEndpoint{}
	}
	return TokenEndpoint{URL: m.Auth.TokenURL, Cache: m.Auth.TokenCache}
}

// Parse reads a manifest.
func Parse(manifest []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &m, nil
}

// Secret is the value handle resolves to in fixtures: the fixtureEnv
// placeholder; for a secret whose format the spec declares, a value of
// that shape (its prefix, then characters of its alphabet); else
// "fixture-secret:" + handle.
func (m *Manifest) Secret(handle string) string {
	if m.FixtureEnv != nil {
		if v, ok := m.FixtureEnv.Secrets[handle]; ok {
			return v
		}
	}
	for _, s := range m.Secrets {
		if f := s.Format; s.Handle == handle && f != nil {
			// A value of the declared shape (a connector may check its
			// prefix or length), the same in every run.
			chars := flowtype.SecretAlphabetChars(f.Alphabet)
			length := f.Length
			if length <= 0 {
				length = flowtype.DefaultSecretLength
			}
			b := []byte(f.Prefix)
			for i := range length {
				b = append(b, chars[(i*7+len(handle))%len(chars)])
			}
			return string(b)
		}
	}
	return "fixture-secret:" + handle
}

// HasSecret reports whether fixtureEnv gives handle a value.
func (m *Manifest) HasSecret(handle string) bool {
	if m.FixtureEnv == nil {
		return false
	}
	_, ok := m.FixtureEnv.Secrets[handle]
	return ok
}

// DatabaseSetup is the SQL fixtures run against, "" when none is declared.
func (m *Manifest) DatabaseSetup() string {
	if m.FixtureEnv == nil || m.FixtureEnv.Database == nil {
		return ""
	}
	return m.FixtureEnv.Database.Setup
}

// Fixture is one fixture as the manifest holds it.
type Fixture struct {
	Name   string
	Params json.RawMessage
	Input  json.RawMessage
	Output json.RawMessage
	Error  *struct {
		Kind       string
		RetryAfter string
	}
	HTTP []Exchange
}

// Succeeds reports whether the fixture expects an output.
func (f Fixture) Succeeds() bool { return f.Error == nil && len(f.Output) > 0 }

// Exchange is one recorded request and its response.
type Exchange struct {
	Request struct {
		Method  string
		URL     string
		Headers map[string]string
		Body    json.RawMessage
	}
	Response struct {
		Status  int
		Headers map[string]string
		Body    json.RawMessage
		Timeout bool
	}
}

// KeyPlaceholder in a recorded URL, header or body stands for the
// activation's idempotency key.
const KeyPlaceholder = "{{idempotency_key}}"

// Expand replaces the key placeholder in s.
func Expand(s, key string) string { return strings.ReplaceAll(s, KeyPlaceholder, key) }

// Diff compares a request with the recording: method and URL exactly, each
// recorded header, and the body when one is recorded (as JSON values when
// the recording is JSON, else byte for byte). It returns one line per
// difference, none when the request is the recorded one.
func (ex Exchange) Diff(method, url string, header http.Header, body []byte, key string) []string {
	var diffs []string
	if !strings.EqualFold(ex.Request.Method, method) {
		diffs = append(diffs, fmt.Sprintf("method: recorded %s, sent %s", ex.Request.Method, method))
	}
	if want := Expand(ex.Request.URL, key); want != url {
		diffs = append(diffs, fmt.Sprintf("url: recorded %s, sent %s", want, url))
	}
	for k, v := range ex.Request.Headers {
		if want, got := Expand(v, key), header.Get(k); want != got {
			diffs = append(diffs, fmt.Sprintf("header %s: recorded %q, sent %q", k, want, got))
		}
	}
	if len(ex.Request.Body) > 0 && string(ex.Request.Body) != "null" {
		var s string
		if json.Unmarshal(ex.Request.Body, &s) == nil {
			if want := Expand(s, key); want != string(body) {
				diffs = append(diffs, fmt.Sprintf("body: recorded %q, sent %q", want, body))
			}
		} else if d := JSONDiff(ex.Request.Body, body); d != "" {
			diffs = append(diffs, "body: "+strings.ReplaceAll(d, "\n", "\n  "))
		}
	}
	return diffs
}

// SameTarget reports whether a request goes where the recording went:
// same method and URL, whatever its headers and body.
func (ex Exchange) SameTarget(method, url, key string) bool {
	return strings.EqualFold(ex.Request.Method, method) && Expand(ex.Request.URL, key) == url
}

// ResponseBody is the recorded response body as sent: a JSON string is the
// raw text, any other JSON value is sent as compact JSON.
func (ex Exchange) ResponseBody() []byte { return BodyBytes(ex.Response.Body) }

// BodyBytes renders a recorded body: a JSON string is the raw text, any
// other JSON value compact JSON.
func BodyBytes(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return raw
	}
	return compact.Bytes()
}

// Answer builds the recorded response to req's method and URL.
func (ex Exchange) Answer(req *http.Request) *http.Response {
	resp := &http.Response{
		StatusCode: ex.Response.Status,
		Status:     fmt.Sprintf("%d %s", ex.Response.Status, http.StatusText(ex.Response.Status)),
		Header:     http.Header{},
		Request:    req,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	for k, v := range ex.Response.Headers {
		resp.Header.Set(k, v)
	}
	resp.Body = nopCloser{bytes.NewReader(ex.ResponseBody())}
	return resp
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// JSONDiff compares two JSON documents by value; "" when equal.
func JSONDiff(want, got []byte) string {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("fixture output is not JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return fmt.Sprintf("node output is not JSON: %v", err)
	}
	if reflect.DeepEqual(w, g) {
		return ""
	}
	wb, _ := json.MarshalIndent(w, "", "  ")
	gb, _ := json.MarshalIndent(g, "", "  ")
	return fmt.Sprintf("want %s\n got %s", wb, gb)
}

// TimeoutError is what a recorded timeout answers: a net.Error whose
// Timeout is true, as a transport reports a provider that never answered.
type TimeoutError struct{ What string }

// Error reads as net/http's own timeout does, so that a connector cannot
// tell a recorded timeout from a live one.
func (e TimeoutError) Error() string {
	if e.What == "" {
		return "net/http: timeout awaiting response headers"
	}
	return e.What + ": net/http: timeout awaiting response headers"
}

// Timeout implements net.Error.
func (e TimeoutError) Timeout() bool { return true }

// Temporary implements net.Error.
func (e TimeoutError) Temporary() bool { return true }

// Method is the method a request acts with: its own, or the one a method
// override header names (X-HTTP-Method-Override, X-HTTP-Method,
// X-Method-Override), which many providers honour on a POST.
func Method(method string, header http.Header) string {
	// Keys are matched case-insensitively: a header set by map assignment
	// keeps the case it was written in.
	for k, vs := range header {
		switch strings.ToLower(k) {
		case "x-http-method-override", "x-http-method", "x-method-override":
			for _, v := range vs {
				if v = strings.TrimSpace(v); v != "" {
					return strings.ToUpper(v)
				}
			}
		}
	}
	return strings.ToUpper(method)
}

// Safe reports whether a request reads only: its method on the wire is
// safe (RFC 9110: GET, HEAD, OPTIONS, TRACE) and no method override
// header asks for another, which a provider may honour. What the
// connector's headers claim never makes a request safer.
func Safe(method string, header http.Header) bool {
	if Overridden(header) {
		return false
	}
	switch strings.ToUpper(method) {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// Overridden reports whether header carries a method override
// (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override).
func Overridden(header http.Header) bool { return overrideMethod(header) != "" }

// Dedupe is one endpoint at which the provider deduplicates writes: a
// request with Method to a URL whose path matches Path (a trailing "*"
// matches any rest) takes effect once per value of its Header, or of
// the JSON field BodyField (dotted) of its body.
type Dedupe struct {
	Method    string
	Path      string
	Header    string
	BodyField string
}

// DefaultContract is the contract of a provider whose spec declares
// none: any write with an Idempotency-Key header is deduplicated on it.
var DefaultContract = []Dedupe{{Method: "*", Path: "*", Header: "Idempotency-Key"}}

// Provider models how a provider applies requests, to count effects the
// way the outside world would see them, by what is on the wire and the
// provider's declared contract, never by what the connector's headers
// claim:
//
//   - a safe request (GET, HEAD, OPTIONS, TRACE on the wire, with no
//     method override header) changes nothing;
//   - a write to an endpoint of the Contract (DefaultContract when nil)
//     that carries its dedupe value is applied once per endpoint and
//     value (repeats return the first result);
//   - a PUT changes nothing when the resource already holds that body,
//     a DELETE nothing when the resource is already deleted (RFC 9110
//     idempotent methods), unless a method override header says
//     otherwise;
//   - anything else (POST, PATCH, other methods) is a new effect.
//
// The zero value is an untouched provider with the default contract. It
// is not safe for concurrent use.
type Provider struct {
	Contract []Dedupe
	keys     map[string]bool
	state    map[string]string
}

// Reading is what the provider's contract reads in one request: the
// value it deduplicates the request on, and why the request carries none
// although it names one.
type Reading struct {
	// Value is the value of the first matching endpoint's header or body
	// field; "" when the request carries none (every copy of it is a new
	// effect).
	Value string
	// On names that header or field; Rule is that endpoint's index in
	// Contract (-1 with the default contract, or without a value).
	On   string
	Rule int
	// Ambiguity says why a write to an endpoint of the contract carries no
	// value although it names one (the header on several lines, the body
	// field named twice, a path not in normal form, a value that is not
	// plain): what to tell the author; "" when nothing is ambiguous.
	Ambiguity string

	endpoint int // the index of Value's endpoint in the contract in force
}

// Read reads a request by the contract, once for every use of it.
func (p *Provider) Read(method, rawURL string, header http.Header, body []byte) Reading {
	r := Reading{Rule: -1, endpoint: -1}
	for i, d := range p.contract() {
		v, why, applies := d.read(method, rawURL, header, body)
		if !applies {
			continue
		}
		if why != "" && r.Ambiguity == "" {
			r.Ambiguity = why
		}
		if v != "" && r.Value == "" {
			r.Value, r.On, r.endpoint = v, d.on(), i
			if p.Contract != nil {
				r.Rule = i
			}
		}
	}
	return r
}

func (p *Provider) contract() []Dedupe {
	if p.Contract == nil {
		return DefaultContract
	}
	return p.Contract
}

// Apply records a request and reports whether it changed the provider.
func (p *Provider) Apply(method, rawURL string, header http.Header, body []byte) bool {
	return p.ApplyRead(method, rawURL, header, body, p.Read(method, rawURL, header, body))
}

// ApplyRead is Apply of a request the provider already read (Read).
func (p *Provider) ApplyRead(method, rawURL string, header http.Header, body []byte, r Reading) bool {
	if Safe(method, header) {
		return false
	}
	if p.keys == nil {
		p.keys, p.state = map[string]bool{}, map[string]string{}
	}
	if i, v := r.endpoint, r.Value; v != "" {
		// A value is one effect at one endpoint of one provider: the
		// narrowest scope a provider keeps its keys in, so that a value
		// sent to two endpoints or hosts counts as two effects.
		u, _ := url.Parse(rawURL)
		k := fmt.Sprintf("%d\x00%s\x00%s\x00%s\x00%s", i, u.Host, strings.ToUpper(method), u.Path, v)
		if p.keys[k] {
			return false
		}
		p.keys[k] = true
		return true
	}
	// A request whose method is overridden is a new effect: the provider
	// may take it as any method.
	var next string
	m := strings.ToUpper(method)
	if Overridden(header) {
		m = ""
	}
	switch m {
	case http.MethodPut:
		next = "put " + canonicalJSON(body)
	case http.MethodDelete:
		next = "deleted"
	case http.MethodPatch:
		// A JSON merge patch (RFC 7396), or a JSON object a provider
		// merges alike: applied again, it changes nothing. Over a body a
		// PUT left, the whole document is known; otherwise what the
		// patches set so far is.
		var ok bool
		if next, ok = patched(p.state[rawURL], header, body); !ok {
			return true
		}
	default:
		return true
	}
	if p.state[rawURL] == next {
		return false
	}
	p.state[rawURL] = next
	return true
}

// patched is the state a PATCH leaves over state ("put DOC", "patch
// DOC" or none): ok is false for a body that is not a JSON object, or a
// JSON Patch (a list of operations, which need not be idempotent).
func patched(state string, header http.Header, body []byte) (next string, ok bool) {
	if media, _, _ := mime.ParseMediaType(header.Get("Content-Type")); media == "application/json-patch+json" {
		return "", false
	}
	var patch map[string]any
	if json.Unmarshal(body, &patch) != nil || patch == nil {
		return "", false
	}
	kind, doc := "patch ", any(nil)
	for _, prefix := range []string{"put ", "patch "} {
		if rest, found := strings.CutPrefix(state, prefix); found && json.Unmarshal([]byte(rest), &doc) == nil {
			kind = prefix
			break
		}
	}
	merged, err := json.Marshal(MergePatch(doc, patch))
	if err != nil {
		return "", false
	}
	return kind + string(merged), true
}

// MergePatch applies a JSON merge patch (RFC 7396) to doc.
func MergePatch(doc, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]any)
	if !ok {
		d = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = MergePatch(d[k], v)
	}
	return d
}

// canonicalJSON is body with its object keys sorted, when it is JSON;
// otherwise body as it is.
func canonicalJSON(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return string(body)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(body)
	}
	return string(b)
}
