// Package client talks to a flowgen registry (registryd): publish an
// artifact and follow its certification, read versions and their files,
// search. Every non-2xx answer is an *api.Error carrying the registry's
// code and message. The client imports only the wire types of package
// api, never the server.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/internal/retryafter"
	"github.com/flowgen-dev/flowgen/registry/api"
)

// Client is a registry at BaseURL, called with Token.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
	// BusyWait bounds how long Publish keeps sending again while the
	// registry answers that it is busy (429 too_many_uploads, 503 busy);
	// zero sends once.
	BusyWait time.Duration
	// OnBusy, when set, hears each busy answer and the wait before the
	// next try.
	OnBusy func(err *api.Error, wait time.Duration)
}

// DefaultBusyWait is New's BusyWait: as long as the registry lets one
// upload take (its default upload deadline), so a full registry delays a
// publish by about one upload, never fails it.
const DefaultBusyWait = 5 * time.Minute

// New returns a client; baseURL is like http://api.example:8700.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 10 * time.Minute}, BusyWait: DefaultBusyWait}
}

func (c *Client) do(ctx context.Context, method, path, ctype string, body io.Reader, out any) ([]byte, error) {
	data, _, err := c.send(ctx, method, path, ctype, body, out)
	return data, err
}

// send makes a request and returns the body and status of a 2xx answer,
// decoded into out when out is not nil.
func (c *Client) send(ctx context.Context, method, path, ctype string, body io.Reader, out any) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, 0, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error *api.Error `json:"error"`
		}
		ae := &api.Error{Status: resp.StatusCode, Code: api.CodeHTTP, Message: fmt.Sprintf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))}
		if json.Unmarshal(data, &e) == nil && e.Error != nil {
			ae = e.Error
			ae.Status = resp.StatusCode
		}
		ae.RetryAfter = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
		return nil, resp.StatusCode, ae
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, 0, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return data, resp.StatusCode, nil
}

// Publish uploads an artifact, its manifest JSON and its zip, as version
// k (which must agree with the manifest). It returns the version as the
// registry recorded it; created is false when the registry already had
// these exact bytes.
//
// While the registry answers that it is busy, Publish waits what the
// answer's Retry-After asks (at least a second, at most half a minute)
// and sends again, for at most BusyWait in all; then it returns the last
// busy answer.
func (c *Client) Publish(ctx context.Context, k api.Key, manifest, zip []byte) (v api.Version, created bool, err error) {
	giveUp := time.Now().Add(c.BusyWait)
	for {
		v, created, err = c.publishOnce(ctx, k, manifest, zip)
		var ae *api.Error
		if !errors.As(err, &ae) || (ae.Code != api.CodeBusy && ae.Code != api.CodeTooManyUploads) {
			return v, created, err
		}
		wait := min(max(ae.RetryAfter, time.Second), 30*time.Second)
		if time.Now().Add(wait).After(giveUp) {
			return v, created, err
		}
		if c.OnBusy != nil {
			c.OnBusy(ae, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, created, errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) publishOnce(ctx context.Context, k api.Key, manifest, zip []byte) (v api.Version, created bool, err error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		write := func(name, ctype string, data []byte) error {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, name, name))
			h.Set("Content-Type", ctype)
			w, err := mw.CreatePart(h)
			if err == nil {
				_, err = w.Write(data)
			}
			return err
		}
		err := write(api.PartManifest, "application/json", manifest)
		if err == nil {
			err = write(api.PartArtifact, "application/zip", zip)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	_, status, err := c.send(ctx, "PUT", k.Path(), mw.FormDataContentType(), pr, &v)
	pr.CloseWithError(err)
	return v, status == http.StatusAccepted, err
}

// Version returns a version's metadata, whatever its state.
func (c *Client) Version(ctx context.Context, k api.Key) (api.Version, error) {
	var v api.Version
	_, err := c.do(ctx, "GET", k.Path(), "", nil, &v)
	return v, err
}

// Wait polls a version until certification finishes, calling progress
// with each new progress line.
func (c *Client) Wait(ctx context.Context, k api.Key, every time.Duration, progress func(api.Version)) (api.Version, error) {
	last := ""
	for {
		v, err := c.Version(ctx, k)
		if err != nil {
			return v, err
		}
		if line := string(v.State) + " " + v.Progress; line != last && progress != nil {
			progress(v)
			last = line
		}
		if v.State == api.Certified || v.State == api.Rejected {
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(every):
		}
	}
}

// File downloads one file of a version (artifact.zip, report.json, ...).
func (c *Client) File(ctx context.Context, k api.Key, name string) ([]byte, error) {
	return c.do(ctx, "GET", k.Path()+"/files/"+url.PathEscape(name), "", nil, nil)
}

// PublicKey returns the registry's signing key (PEM).
func (c *Client) PublicKey(ctx context.Context) ([]byte, error) {
	return c.do(ctx, "GET", "/v1/public-key", "", nil, nil)
}

// Search returns the versions matching q (the query parameters of
// GET /v1/connectors).
func (c *Client) Search(ctx context.Context, q url.Values) ([]api.Version, error) {
	var r api.SearchResult
	_, err := c.do(ctx, "GET", "/v1/connectors?"+q.Encode(), "", nil, &r)
	return r.Versions, err
}

// IsNotFound reports whether err is the registry's 404.
func IsNotFound(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// postJSON posts in as JSON to path and decodes the answer into out.
func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, http.MethodPost, path, "application/json", bytes.NewReader(b), out)
	return err
}

// CreateToken creates a token through the admin API; the secret is in the
// answer, once.
func (c *Client) CreateToken(ctx context.Context, req api.TokenRequest) (api.TokenCreated, error) {
	var out api.TokenCreated
	return out, c.postJSON(ctx, "/v1/admin/tokens", req, &out)
}

// ListTokens lists every token through the admin API.
func (c *Client) ListTokens(ctx context.Context) ([]api.TokenInfo, error) {
	var out api.TokenList
	_, err := c.do(ctx, http.MethodGet, "/v1/admin/tokens", "", nil, &out)
	return out.Tokens, err
}

// RevokeToken revokes a token through the admin API.
func (c *Client) RevokeToken(ctx context.Context, id string) (api.TokenInfo, error) {
	var out api.TokenInfo
	return out, c.postJSON(ctx, "/v1/admin/tokens/"+url.PathEscape(id)+"/revoke", struct{}{}, &out)
}

// CollectGarbage runs a garbage collection through the admin API.
func (c *Client) CollectGarbage(ctx context.Context, req api.GCRequest) (api.GCReport, error) {
	var out api.GCReport
	return out, c.postJSON(ctx, "/v1/admin/gc", req, &out)
}

// FlowgenModule returns the flowgen module the registry certifies with
// and serves, with its signature.
func (c *Client) FlowgenModule(ctx context.Context) (api.FlowgenModuleInfo, error) {
	var info api.FlowgenModuleInfo
	_, err := c.do(ctx, http.MethodGet, "/v1/flowgen-module", "", nil, &info)
	return info, err
}

// GoProxyFile downloads one file of the registry's Go module proxy, a
// path below /go/ such as "github.com/flowgen-dev/flowgen/@v/list".
func (c *Client) GoProxyFile(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, "/go/"+path, "", nil, nil)
}
