package httpfixture

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// TokenEndpoint is a provider's OAuth 2.0 token endpoint (RFC 6749,
// section 3.2), as a spec declares it: a token request there exchanges
// credentials for an access token and changes nothing at the provider,
// and the KV entries Cache names hold a cached token. The zero value
// declares none.
type TokenEndpoint struct {
	// URL is the endpoint: scheme, host and path.
	URL string
	// Cache is the KV entry the token is cached in; a trailing "*"
	// matches any rest.
	Cache string
}

// Asks reports whether a request is a token request: a POST to URL (its
// query aside, with nothing overriding the method) whose form or JSON
// body names a grant_type. Anything else sent to the endpoint is judged
// as any other request.
func (t TokenEndpoint) Asks(method, rawURL string, header http.Header, body []byte) bool {
	if t.URL == "" || !strings.EqualFold(method, http.MethodPost) || Overridden(header) {
		return false
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	u.RawQuery, u.Fragment = "", ""
	want, err := url.Parse(t.URL)
	if err != nil || !strings.EqualFold(u.Scheme, want.Scheme) || !strings.EqualFold(u.Host, want.Host) || u.EscapedPath() != want.EscapedPath() {
		return false
	}
	media, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	switch media {
	case "application/x-www-form-urlencoded":
		form, err := url.ParseQuery(string(body))
		return err == nil && len(form["grant_type"]) == 1 && form.Get("grant_type") != ""
	case "application/json":
		var doc map[string]any
		if json.Unmarshal(body, &doc) != nil {
			return false
		}
		grant, ok := doc["grant_type"].(string)
		return ok && grant != ""
	}
	return false
}

// Caches reports whether the KV entry key is the token cache.
func (t TokenEndpoint) Caches(key string) bool {
	if t.Cache == "" {
		return false
	}
	if prefix, ok := strings.CutSuffix(t.Cache, "*"); ok {
		return strings.HasPrefix(key, prefix)
	}
	return key == t.Cache
}
