package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/retryafter"
	"github.com/flowgen-dev/flowgen/runtime"
)

// maxHTTPBody bounds a response body a node may read.
const maxHTTPBody = 32 << 20

// HTTP is the HTTP capability: real requests over net/http, refused unless
// the host is on the node's egress allowlist (redirects included), with
// responses classified into error kinds: 401/403 Auth, 429 RateLimited
// (with Retry-After), 408 and 5xx Transient, other 4xx Permanent, network
// failures Transient, egress violations PolicyDenied. It implements
// HTTPReader, PinnedHTTPReader and HTTPWriter.
type HTTP struct {
	client *http.Client
	egress []string
	// secrets, when set, refuses requests that carry a secret of the
	// activation where its spec does not send it (Grants sets it).
	secrets *sentSecrets
}

// NewHTTP returns the capability for a node with the given egress
// allowlist (flowtype.EgressEntry). base may be nil for
// http.DefaultTransport.
func NewHTTP(base http.RoundTripper, egress []string) *HTTP {
	if base == nil {
		base = http.DefaultTransport
	}
	h := &HTTP{egress: egress}
	h.client = &http.Client{
		Transport: base,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if err := h.allowed(req.URL); err != nil {
				return err
			}
			// A redirect carries the headers on (Go drops only a few, and
			// only across domains), and for 307 and 308 the body.
			var body []byte
			if req.GetBody != nil {
				if rc, err := req.GetBody(); err == nil {
					body, _ = io.ReadAll(io.LimitReader(rc, maxHTTPBody))
					rc.Close()
				}
			}
			return h.secrets.check(req.Method, req.URL, req.Header, body)
		},
	}
	return h
}

// allowed reports an egress violation as PolicyDenied: the allowlist must
// admit the URL's host and port (flowtype.EgressAllows).
func (h *HTTP) allowed(u *url.URL) error {
	target := flowtype.TargetOf(u)
	if flowtype.EgressAllows(h.egress, target) {
		return nil
	}
	return runtime.Errorf(runtime.PolicyDenied, "egress to %s is not allowed (allowlist: %s)", target, strings.Join(h.egress, ", "))
}

// Get implements HTTPReader.
func (h *HTTP) Get(ctx context.Context, rawURL string, header http.Header) (*runtime.HTTPResponse, error) {
	return h.Do(ctx, http.MethodGet, rawURL, header, nil)
}

// GetPinned implements PinnedHTTPReader. pin is the expected ETag, or
// "sha256:<hex>" of the body; anything else read is refused as Permanent.
func (h *HTTP) GetPinned(ctx context.Context, rawURL, pin string, header http.Header) (*runtime.HTTPResponse, error) {
	if pin == "" {
		return nil, runtime.Errorf(runtime.SchemaMismatch, "pinned read of %s without a pin", rawURL)
	}
	resp, err := h.Get(ctx, rawURL, header)
	if err != nil {
		return nil, err
	}
	if want, ok := strings.CutPrefix(pin, "sha256:"); ok {
		sum := sha256.Sum256(resp.Body)
		if got := hex.EncodeToString(sum[:]); got != strings.ToLower(want) {
			return nil, runtime.Errorf(runtime.Permanent, "pinned read of %s: body hash %s, pinned %s", rawURL, got, want)
		}
		return resp, nil
	}
	if etag := resp.Header.Get("ETag"); etag != pin {
		return nil, runtime.Errorf(runtime.Permanent, "pinned read of %s: ETag %s, pinned %s", rawURL, etag, pin)
	}
	return resp, nil
}

// transportHeaders frame the request on the connection; the transport
// sets them from the request itself. A connector that sets one (in any
// spelling: header names are case-insensitive, and net/http leaves out
// only the canonical ones) could make one request read as two.
var transportHeaders = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Connection", "Te", "Trailer", "Upgrade"}

// Do implements HTTPWriter. Its errors never show a secret the
// activation resolved (a webhook's URL is its secret): they reach job
// state, logs and consoles.
func (h *HTTP) Do(ctx context.Context, method, rawURL string, header http.Header, body []byte) (*runtime.HTTPResponse, error) {
	resp, err := h.do(ctx, method, rawURL, header, body)
	return resp, h.secrets.redact(err)
}

func (h *HTTP) do(ctx context.Context, method, rawURL string, header http.Header, body []byte) (*runtime.HTTPResponse, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, runtime.Errorf(runtime.Permanent, "invalid URL %q", rawURL)
	}
	if err := h.allowed(u); err != nil {
		return nil, err
	}
	// Errors name the request without its query, where an input's
	// values travel (a customer id, an email): an error reaches the
	// job's state, the console and the logs.
	shown := withoutQuery(u)
	req, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, runtime.Errorf(runtime.Permanent, "request %s %s: %w", method, shown, err)
	}
	for k, vs := range header {
		ck := http.CanonicalHeaderKey(k)
		if slices.Contains(transportHeaders, ck) {
			return nil, runtime.Errorf(runtime.PolicyDenied, "%s %s: header %s frames the connection, which is the transport's to set", method, shown, k)
		}
		req.Header[ck] = append(req.Header[ck], vs...)
	}
	if err := h.secrets.check(method, u, req.Header, body); err != nil {
		return nil, err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		var ce *runtime.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL
		}
		return nil, runtime.Errorf(runtime.Transient, "%s %s: %w", method, shown, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBody+1))
	if err != nil {
		return nil, runtime.Errorf(runtime.Transient, "%s %s: reading body: %w", method, shown, err)
	}
	if len(data) > maxHTTPBody {
		return nil, runtime.Errorf(runtime.Permanent, "%s %s: body larger than %d bytes", method, shown, maxHTTPBody)
	}
	out := &runtime.HTTPResponse{Status: resp.StatusCode, Header: resp.Header, Body: data}
	return out, classify(method, shown, resp)
}

// classify maps an HTTP status to an error kind, as
// flowtype.KindsForResponse allows; nil for success.
func classify(method, shown string, resp *http.Response) error {
	code := resp.StatusCode
	if code < 400 {
		return nil
	}
	e := &runtime.Error{Err: fmt.Errorf("%s %s: %s", method, shown, resp.Status), Status: code}
	switch {
	case code == http.StatusForbidden && resp.Header.Get("Retry-After") != "":
		// Throttled, not refused: a 403 that says when to come back
		// (GitHub's secondary rate limits).
		e.Kind = runtime.RateLimited
		e.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		e.Kind = runtime.Auth
	case code == http.StatusTooManyRequests:
		e.Kind = runtime.RateLimited
		e.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
	case code == http.StatusRequestTimeout || code >= 500:
		e.Kind = runtime.Transient
		e.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
	default:
		e.Kind = runtime.Permanent
	}
	return e
}

var _ interface {
	runtime.HTTPReader
	runtime.PinnedHTTPReader
	runtime.HTTPWriter
} = (*HTTP)(nil)

// withoutQuery is u as errors show it: scheme, host and path, with "?…"
// for a query and no user information or fragment.
func withoutQuery(u *url.URL) string {
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.RawQuery != "" {
		return shown.String() + "?…"
	}
	return shown.String()
}
