package testharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/flowgen-dev/flowgen/internal/atomicfile"
	"github.com/flowgen-dev/flowgen/runtime"
)

// RecordEnv is the environment variable that switches HTTP from replaying
// cassettes to recording them: FLOWGEN_RECORD=1 go test ./...
const RecordEnv = "FLOWGEN_RECORD"

// MatchHeaders are the request headers a replay compares besides method,
// URL and body: the ones that change what a provider does.
var MatchHeaders = []string{"Content-Type", "Idempotency-Key", "If-Match", "If-None-Match"}

// RedactedHeaders are never written to a cassette; their presence is kept
// with the value replaced by "REDACTED".
var RedactedHeaders = []string{"Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key"}

// Exchange is one recorded request and its response.
type Exchange struct {
	Request  Message `json:"request"`
	Response Message `json:"response"`
}

// Message is a request (Method, URL) or a response (Status) with headers
// and a body; a body that is not UTF-8 is stored in BodyBase64.
type Message struct {
	Method     string            `json:"method,omitempty"`
	URL        string            `json:"url,omitempty"`
	Status     int               `json:"status,omitempty"`
	Header     map[string]string `json:"header,omitempty"`
	Body       string            `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
}

func newMessage(h http.Header, body []byte) Message {
	m := Message{Header: map[string]string{}}
	for k := range h {
		m.Header[k] = h.Get(k)
		if slices.ContainsFunc(RedactedHeaders, func(r string) bool { return strings.EqualFold(r, k) }) {
			m.Header[k] = "REDACTED"
		}
	}
	if len(m.Header) == 0 {
		m.Header = nil
	}
	if utf8.Valid(body) {
		m.Body = string(body)
	} else {
		m.BodyBase64 = body
	}
	return m
}

func (m Message) body() []byte {
	if m.BodyBase64 != nil {
		return m.BodyBase64
	}
	return []byte(m.Body)
}

// Cassette replays recorded exchanges as an http.RoundTripper. A request is
// answered by the first unused exchange with the same method, URL, body and
// MatchHeaders, so repeated identical requests replay in order and others in
// any order. A request nothing matches fails as Permanent (a retry would not
// match either) with the differences from the closest recorded request.
type Cassette struct {
	mu        sync.Mutex
	exchanges []Exchange
	used      []bool
	problems  []string
}

// NewCassette replays exchanges.
func NewCassette(exchanges []Exchange) *Cassette {
	return &Cassette{exchanges: exchanges, used: make([]bool, len(exchanges))}
}

// LoadCassette reads a cassette file written by a Recorder.
func LoadCassette(path string) (*Cassette, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cassette: %w", err)
	}
	var f cassetteFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("cassette %s: %w", path, err)
	}
	return NewCassette(f.Exchanges), nil
}

type cassetteFile struct {
	Exchanges []Exchange `json:"exchanges"`
}

// RoundTrip implements http.RoundTripper.
func (c *Cassette) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	sent := newMessage(req.Header, body)
	sent.Method, sent.URL = req.Method, req.URL.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	best, bestDiffs := -1, []string(nil)
	for i, ex := range c.exchanges {
		diffs := requestDiffs(ex.Request, sent)
		if len(diffs) == 0 && !c.used[i] {
			c.used[i] = true
			return response(req, ex.Response), nil
		}
		if best < 0 || len(diffs) < len(bestDiffs) {
			best, bestDiffs = i, diffs
		}
	}
	var msg string
	switch {
	case best < 0:
		msg = fmt.Sprintf("unrecorded request %s %s: the cassette is empty", req.Method, req.URL)
	case len(bestDiffs) == 0:
		msg = fmt.Sprintf("request %s %s repeats recorded exchange %d, which was already used", req.Method, req.URL, best+1)
	default:
		msg = fmt.Sprintf("unrecorded request %s %s; the closest recorded request (exchange %d) differs:\n  %s", req.Method, req.URL, best+1, strings.Join(bestDiffs, "\n  "))
	}
	c.problems = append(c.problems, msg)
	return nil, runtime.Errorf(runtime.Permanent, "%s", msg)
}

// Problems lists every request the cassette could not answer.
func (c *Cassette) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.problems)
}

// Unused lists the recorded exchanges no request used, as "METHOD URL".
func (c *Cassette) Unused() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for i, ex := range c.exchanges {
		if !c.used[i] {
			out = append(out, ex.Request.Method+" "+ex.Request.URL)
		}
	}
	return out
}

func requestDiffs(rec, sent Message) []string {
	var d []string
	if !strings.EqualFold(rec.Method, sent.Method) {
		d = append(d, fmt.Sprintf("method: recorded %s, sent %s", rec.Method, sent.Method))
	}
	if rec.URL != sent.URL {
		d = append(d, fmt.Sprintf("url: recorded %s, sent %s", rec.URL, sent.URL))
	}
	for _, h := range MatchHeaders {
		if r, s := headerValue(rec.Header, h), headerValue(sent.Header, h); r != s {
			d = append(d, fmt.Sprintf("header %s: recorded %q, sent %q", h, r, s))
		}
	}
	if r, s := rec.body(), sent.body(); !bytes.Equal(r, s) {
		d = append(d, fmt.Sprintf("body: recorded %s, sent %s", clip(r), clip(s)))
	}
	return d
}

func headerValue(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func clip(b []byte) string {
	const max = 200
	if len(b) > max {
		return fmt.Sprintf("%q... (%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

func response(req *http.Request, m Message) *http.Response {
	resp := &http.Response{StatusCode: m.Status, Status: fmt.Sprintf("%d %s", m.Status, http.StatusText(m.Status)),
		Header: http.Header{}, Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	for k, v := range m.Header {
		resp.Header.Set(k, v)
	}
	resp.Body = io.NopCloser(bytes.NewReader(m.body()))
	resp.ContentLength = int64(len(m.body()))
	return resp
}

// Recorder passes requests to a live transport and records each exchange.
type Recorder struct {
	next      http.RoundTripper
	mu        sync.Mutex
	exchanges []Exchange
}

// NewRecorder records what next answers (http.DefaultTransport when nil).
func NewRecorder(next http.RoundTripper) *Recorder {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Recorder{next: next}
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := r.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	ex := Exchange{Request: newMessage(req.Header, body), Response: newMessage(resp.Header, respBody)}
	ex.Request.Method, ex.Request.URL, ex.Response.Status = req.Method, req.URL.String(), resp.StatusCode
	r.mu.Lock()
	r.exchanges = append(r.exchanges, ex)
	r.mu.Unlock()
	return resp, nil
}

// Exchanges returns what was recorded so far.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.exchanges)
}

// Save writes the cassette file (indented JSON) through a temporary file and
// a rename, so a reader never sees half of it.
func (r *Recorder) Save(path string) error {
	data, err := json.MarshalIndent(cassetteFile{Exchanges: r.Exchanges()}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o644)
}

// HTTP returns the transport a test should give its connector: with
// FLOWGEN_RECORD=1 a Recorder over live that saves to path when the test
// ends (if it passed), otherwise the cassette at path, and the test fails
// at its end for every request the cassette could not answer and every
// recorded exchange left unused.
func HTTP(t testing.TB, path string, live http.RoundTripper) http.RoundTripper {
	t.Helper()
	if os.Getenv(RecordEnv) == "1" {
		rec := NewRecorder(live)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("cassette %s not saved: the test failed", path)
				return
			}
			if err := rec.Save(path); err != nil {
				t.Errorf("cassette %s: %v", path, err)
			}
		})
		return rec
	}
	c, err := LoadCassette(path)
	if err != nil {
		t.Fatalf("%v (record it with %s=1)", err, RecordEnv)
	}
	t.Cleanup(func() {
		for _, p := range c.Problems() {
			t.Errorf("cassette %s: %s", path, p)
		}
		for _, u := range c.Unused() {
			t.Errorf("cassette %s: recorded exchange %s was never requested", path, u)
		}
	})
	return c
}
