package jobapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Client is a Service reached over a running server's API. Errors keep
// their meaning across the wire: errors.Is(err, store.ErrNotFound) and
// runtime.ErrUnknownFlow hold as on the engine, and a refused input is
// an *flowir.InputError.
type Client struct {
	// Endpoint is the server the client talks to.
	Endpoint Endpoint
	http     *http.Client
}

var _ Service = (*Client)(nil)

// NewClient returns a client of the server at ep.
func NewClient(ep Endpoint) *Client {
	return &Client{Endpoint: ep, http: &http.Client{Timeout: 2 * time.Minute}}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Endpoint.Addr+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Endpoint.Token)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header)) // the caller's trace, if any
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("flowgen server at %s (pid %d): %w", c.Endpoint.Addr, c.Endpoint.PID, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("flowgen server at %s: %w", c.Endpoint.Addr, err)
	}
	if resp.StatusCode >= 300 {
		return answerError(resp.StatusCode, raw)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("flowgen server at %s: answer: %w", c.Endpoint.Addr, err)
	}
	return nil
}

// answerError turns an error answer back into the error the engine gave.
func answerError(status int, raw []byte) error {
	var e apiError
	if json.Unmarshal(raw, &e) != nil || e.Code == "" {
		return fmt.Errorf("flowgen server: %d %s", status, bytes.TrimSpace(raw))
	}
	switch e.Code {
	case "bad_input":
		return &flowir.InputError{Flow: e.Flow, Problems: e.Problems}
	case "not_found":
		return &remoteError{e.Message, store.ErrNotFound}
	case "unknown_flow":
		return &remoteError{e.Message, runtime.ErrUnknownFlow}
	case "unknown_version":
		return &remoteError{e.Message, runtime.ErrFlowVersionMissing}
	case "key_in_use":
		return &remoteError{e.Message, runtime.ErrKeyInUse}
	case "dead_letter_taken":
		return &remoteError{e.Message, runtime.ErrDeadLetterTaken}
	case "undecodable":
		return &remoteError{e.Message, runtime.ErrUndecodable}
	case "bad_request":
		return &remoteError{e.Message, runtime.ErrBadQuery}
	}
	return errors.New(e.Message)
}

// remoteError is the server's message with the sentinel it wrapped.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

func jobPath(job runtime.JobID, rest string) string { return "/v1/jobs/" + job.String() + rest }

// Start implements Service.
func (c *Client) Start(ctx context.Context, flow string, input json.RawMessage) (runtime.JobID, error) {
	job, _, err := c.StartOnce(ctx, flow, "", input)
	return job, err
}

// StartOnce implements Service.
func (c *Client) StartOnce(ctx context.Context, flow, key string, input json.RawMessage) (runtime.JobID, bool, error) {
	var out startResponse
	if err := c.do(ctx, http.MethodPost, "/v1/jobs", startRequest{Flow: flow, Input: input, Key: key}, &out); err != nil {
		return runtime.JobID{}, false, err
	}
	job, err := runtime.ParseJobID(out.Job)
	return job, out.Created, err
}

// Status implements Service.
func (c *Client) Status(ctx context.Context, job runtime.JobID) (runtime.JobStatus, error) {
	var out jobView
	err := c.do(ctx, http.MethodGet, jobPath(job, ""), nil, &out)
	return out.JobStatus, err
}

// Inspect implements Service.
func (c *Client) Inspect(ctx context.Context, job runtime.JobID) (*runtime.Inspection, error) {
	var out runtime.Inspection
	if err := c.do(ctx, http.MethodGet, jobPath(job, "/inspection"), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Jobs implements Service.
func (c *Client) Jobs(ctx context.Context, q runtime.JobQuery) (runtime.JobList, error) {
	var out runtime.JobList
	err := c.do(ctx, http.MethodGet, "/v1/jobs?"+queryToURL(q).Encode(), nil, &out)
	return out, err
}

// Waiting implements Service.
func (c *Client) Waiting(ctx context.Context, job runtime.JobID) ([]string, error) {
	var out jobView
	err := c.do(ctx, http.MethodGet, jobPath(job, ""), nil, &out)
	return out.Waiting, err
}

// Pause implements Service.
func (c *Client) Pause(ctx context.Context, job runtime.JobID) error {
	return c.do(ctx, http.MethodPost, jobPath(job, "/pause"), nil, nil)
}

// Resume implements Service.
func (c *Client) Resume(ctx context.Context, job runtime.JobID) error {
	return c.do(ctx, http.MethodPost, jobPath(job, "/resume"), nil, nil)
}

// Kill implements Service.
func (c *Client) Kill(ctx context.Context, job runtime.JobID, reason string) error {
	return c.do(ctx, http.MethodPost, jobPath(job, "/kill"), killRequest{Reason: reason}, nil)
}

// Signal implements Service.
func (c *Client) Signal(ctx context.Context, job runtime.JobID, node string, d runtime.Decision) (int, error) {
	var out signalResponse
	err := c.do(ctx, http.MethodPost, jobPath(job, "/signal"), signalRequest{Node: node, Decision: d}, &out)
	return out.Resumed, err
}

// Health returns the server's info; it needs no token.
func (c *Client) Health(ctx context.Context) (Info, error) {
	var out Info
	err := c.do(ctx, http.MethodGet, "/v1/health", nil, &out)
	return out, err
}
