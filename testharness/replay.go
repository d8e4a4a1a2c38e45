package testharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Recording is one run of a node: what went in, every capability call with
// its arguments and result in order, and what came out. Secret values are
// never recorded (a replay hands the node "replayed-secret:HANDLE"), nor are
// RedactedHeaders. Database calls are not recorded: a node that uses the db
// capability cannot be replayed.
type Recording struct {
	Node    string          `json:"node"`
	Key     string          `json:"idempotency_key"`
	Attempt int             `json:"attempt"`
	Params  json.RawMessage `json:"params,omitempty"`
	Input   json.RawMessage `json:"input"`
	Calls   []Call          `json:"calls"`
	Output  json.RawMessage `json:"output,omitempty"`
	Error   *CallError      `json:"error,omitempty"`
}

// Call is one capability call.
type Call struct {
	Capability string          `json:"capability"`
	Op         string          `json:"op"`
	Args       json.RawMessage `json:"args"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *CallError      `json:"error,omitempty"`
}

// CallError is a recorded error with its kind in the runtime's taxonomy.
type CallError struct {
	Kind       runtime.ErrorKind `json:"kind"`
	Message    string            `json:"message"`
	RetryAfter time.Duration     `json:"retry_after,omitempty"`
}

func callError(err error) *CallError {
	if err == nil {
		return nil
	}
	ce := &CallError{Kind: runtime.KindOf(err), Message: err.Error()}
	var re *runtime.Error
	if errors.As(err, &re) {
		ce.RetryAfter, ce.Message = re.RetryAfter, re.Err.Error()
	}
	return ce
}

func (e *CallError) err() error {
	if e == nil {
		return nil
	}
	return &runtime.Error{Kind: e.Kind, RetryAfter: e.RetryAfter, Err: errors.New(e.Message)}
}

// Record runs node once with caps, recording every call it makes through
// them, and returns the recording (also when the node fails: its error is
// part of what was recorded).
func Record(ctx context.Context, node runtime.Runner, key string, params, input json.RawMessage, caps runtime.Capabilities) *Recording {
	rec := &Recording{Node: node.Info().ID, Key: key, Attempt: 1, Params: params, Input: input}
	t := &tape{rec: rec, recording: true}
	out, err := node.Run(runtime.NewContext(ctx, key, rec.Attempt, t.wrap(caps)), params, input)
	rec.Output, rec.Error = out, callError(err)
	return rec
}

// Replay runs node again on rec's inputs with capabilities that answer from
// the recording, and returns an error that names every divergence: a call
// made out of order or with other arguments, a recorded call not made, or
// another output or error.
func Replay(ctx context.Context, node runtime.Runner, rec *Recording) error {
	t := &tape{rec: rec}
	caps := t.wrap(runtime.Capabilities{})
	out, err := node.Run(runtime.NewContext(ctx, rec.Key, rec.Attempt, caps), rec.Params, rec.Input)
	t.mu.Lock()
	defer t.mu.Unlock()
	problems := t.problems
	if t.next < len(rec.Calls) {
		c := rec.Calls[t.next]
		problems = append(problems, fmt.Sprintf("the replay stopped after %d of %d recorded calls; next was %s %s %s", t.next, len(rec.Calls), c.Capability, c.Op, compact(c.Args)))
	}
	switch got := callError(err); {
	case rec.Error == nil && got != nil:
		problems = append(problems, fmt.Sprintf("recorded output %s, replay failed: %v", compact(rec.Output), err))
	case rec.Error != nil && got == nil:
		problems = append(problems, fmt.Sprintf("recorded error %s: %s, replay returned %s", rec.Error.Kind, rec.Error.Message, out))
	case got != nil && (got.Kind != rec.Error.Kind || got.Message != rec.Error.Message):
		problems = append(problems, fmt.Sprintf("recorded error %s: %s, replay error %s: %s", rec.Error.Kind, rec.Error.Message, got.Kind, got.Message))
	case got == nil && !bytes.Equal(compact(out), compact(rec.Output)):
		problems = append(problems, fmt.Sprintf("output: recorded %s, replayed %s", compact(rec.Output), compact(out)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("replay of %s diverged:\n  %s", rec.Node, strings.Join(problems, "\n  "))
	}
	return nil
}

// Save writes the recording as indented JSON.
func (r *Recording) Save(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// LoadRecording reads a recording written by Save.
func LoadRecording(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// tape records calls (recording) or answers them from a recording.
type tape struct {
	mu        sync.Mutex
	rec       *Recording
	recording bool
	next      int
	problems  []string
}

// invoke records live's answer to one call, or replays it.
func invoke[R any](t *tape, capability, op string, args any, live func() (R, error)) (R, error) {
	var zero R
	a, err := json.Marshal(args)
	if err != nil {
		return zero, err
	}
	if t.recording {
		r, err := live()
		res, merr := json.Marshal(r)
		if merr != nil {
			return r, merr
		}
		t.mu.Lock()
		t.rec.Calls = append(t.rec.Calls, Call{Capability: capability, Op: op, Args: a, Result: res, Error: callError(err)})
		t.mu.Unlock()
		return r, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next >= len(t.rec.Calls) {
		msg := fmt.Sprintf("call %d, %s %s %s, was not recorded (the recording has %d calls)", t.next+1, capability, op, a, len(t.rec.Calls))
		t.problems = append(t.problems, msg)
		return zero, runtime.Errorf(runtime.Permanent, "%s", msg)
	}
	c := t.rec.Calls[t.next]
	t.next++
	if c.Capability != capability || c.Op != op || !bytes.Equal(compact(c.Args), a) {
		msg := fmt.Sprintf("call %d: recorded %s %s %s, replay made %s %s %s", t.next, c.Capability, c.Op, compact(c.Args), capability, op, a)
		t.problems = append(t.problems, msg)
		return zero, runtime.Errorf(runtime.Permanent, "%s", msg)
	}
	var r R
	if len(c.Result) > 0 {
		if err := json.Unmarshal(c.Result, &r); err != nil {
			return zero, fmt.Errorf("call %d result: %w", t.next, err)
		}
	}
	return r, c.Error.err()
}

// wrap puts the tape between the node and each capability. Replaying, the
// live capabilities are absent and every declared one answers from the tape.
func (t *tape) wrap(live runtime.Capabilities) runtime.Capabilities {
	if !t.recording {
		live = everything
	}
	var out runtime.Capabilities
	h := httpCap{t: t, c: live}
	if live.HTTPRead != nil {
		out.HTTPRead = h
	}
	if live.HTTPPinned != nil {
		out.HTTPPinned = h
	}
	if live.HTTPWrite != nil {
		out.HTTPWrite = h
	}
	s := storeCap{t: t, c: live}
	if live.KVRead != nil {
		out.KVRead = kvReader(s)
	}
	if live.KVWrite != nil {
		out.KVWrite = s
	}
	if live.BlobRead != nil {
		out.BlobRead = s
	}
	if live.BlobWrite != nil {
		out.BlobWrite = s
	}
	if live.Dedupe != nil {
		out.Dedupe = s
	}
	if live.Clock != nil {
		out.Clock = s
	}
	if live.RNG != nil {
		out.RNG = s
	}
	if live.Secrets != nil {
		out.Secrets = s
	}
	return out
}

// everything marks every replayable capability as present when replaying.
var everything = func() runtime.Capabilities {
	var s storeCap
	return runtime.Capabilities{HTTPRead: httpCap{}, HTTPPinned: httpCap{}, HTTPWrite: httpCap{},
		KVRead: kvReader(s), KVWrite: s, BlobRead: s, BlobWrite: s, Dedupe: s, Clock: s, RNG: s, Secrets: s}
}()

type httpArgs struct {
	Method string            `json:"method,omitempty"`
	URL    string            `json:"url"`
	Pin    string            `json:"pin,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
}

func recordedHeader(h http.Header) map[string]string { return newMessage(h, nil).Header }

type httpCap struct {
	t *tape
	c runtime.Capabilities
}

func (h httpCap) Get(ctx context.Context, url string, header http.Header) (*runtime.HTTPResponse, error) {
	return invoke(h.t, "http.read", "Get", httpArgs{URL: url, Header: recordedHeader(header)}, func() (*runtime.HTTPResponse, error) {
		return h.c.HTTPRead.Get(ctx, url, header)
	})
}

func (h httpCap) GetPinned(ctx context.Context, url, pin string, header http.Header) (*runtime.HTTPResponse, error) {
	return invoke(h.t, "http.read.pinned", "GetPinned", httpArgs{URL: url, Pin: pin, Header: recordedHeader(header)}, func() (*runtime.HTTPResponse, error) {
		return h.c.HTTPPinned.GetPinned(ctx, url, pin, header)
	})
}

func (h httpCap) Do(ctx context.Context, method, url string, header http.Header, body []byte) (*runtime.HTTPResponse, error) {
	return invoke(h.t, "http.write", "Do", httpArgs{Method: method, URL: url, Header: recordedHeader(header), Body: body}, func() (*runtime.HTTPResponse, error) {
		return h.c.HTTPWrite.Do(ctx, method, url, header, body)
	})
}

// storeCap records the store-backed and local capabilities.
type storeCap struct {
	t *tape
	c runtime.Capabilities
}

type kvValue struct {
	Value []byte `json:"value,omitempty"`
	Found bool   `json:"found"`
}

// kvReader is storeCap's KVReader (its Get would clash with nothing else,
// but KV reads and writes are separate capabilities).
type kvReader storeCap

func (k kvReader) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := invoke(k.t, "kv.read", "Get", key, func() (kvValue, error) {
		v, ok, err := k.c.KVRead.Get(ctx, key)
		return kvValue{v, ok}, err
	})
	return v.Value, v.Found, err
}

func (s storeCap) Put(ctx context.Context, key string, value []byte) error {
	_, err := invoke(s.t, "kv.write", "Put", map[string]any{"key": key, "value": value}, func() (struct{}, error) {
		return struct{}{}, s.c.KVWrite.Put(ctx, key, value)
	})
	return err
}

func (s storeCap) ReadBlob(ctx context.Context, name string) ([]byte, error) {
	return invoke(s.t, "blob.read", "ReadBlob", name, func() ([]byte, error) { return s.c.BlobRead.ReadBlob(ctx, name) })
}

func (s storeCap) WriteBlob(ctx context.Context, name string, data []byte) error {
	_, err := invoke(s.t, "blob.write", "WriteBlob", map[string]any{"name": name, "data": data}, func() (struct{}, error) {
		return struct{}{}, s.c.BlobWrite.WriteBlob(ctx, name, data)
	})
	return err
}

func (s storeCap) PutIfAbsent(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	return invoke(s.t, "dedupe", "PutIfAbsent", map[string]any{"key": key, "ttl": ttl.String()}, func() (bool, error) {
		return s.c.Dedupe.PutIfAbsent(ctx, key, ttl)
	})
}

func (s storeCap) Now() time.Time {
	t, _ := invoke(s.t, "clock", "Now", nil, func() (time.Time, error) { return s.c.Clock.Now(), nil })
	return t
}

func (s storeCap) Uint64() uint64 {
	n, _ := invoke(s.t, "rng", "Uint64", nil, func() (uint64, error) { return s.c.RNG.Uint64(), nil })
	return n
}

// Secret records the handle only; a replay answers "replayed-secret:HANDLE".
func (s storeCap) Secret(ctx context.Context, handle string) (string, error) {
	var value string
	_, err := invoke(s.t, "secrets", "Secret", handle, func() (struct{}, error) {
		v, err := s.c.Secrets.Secret(ctx, handle)
		value = v
		return struct{}{}, err
	})
	if err != nil {
		return "", err
	}
	if !s.t.recording {
		value = "replayed-secret:" + handle
	}
	return value, nil
}

// compact is JSON without insignificant space, so that a recording read
// back from an indented file compares equal to a fresh one.
func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}
