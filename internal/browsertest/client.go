package browsertest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Client reads pages as a browser would, without one: it keeps cookies,
// does not follow redirects (Do returns their target instead of a body)
// and posts forms with the page's form token.
type Client struct {
	t    testing.TB
	base string
	c    *http.Client
}

// NewClient is a client of the site at base (http://host:port).
func NewClient(t testing.TB, base string) *Client {
	jar, _ := cookiejar.New(nil)
	return &Client{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Do sends a request with the extra header and returns the status and
// the body, or a redirect's target.
func (b *Client) Do(method, path, ctype string, body io.Reader, header http.Header) (int, string) {
	b.t.Helper()
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	return resp.StatusCode, string(raw)
}

// Get fetches path.
func (b *Client) Get(path string) (int, string) {
	b.t.Helper()
	return b.Do(http.MethodGet, path, "", nil, nil)
}

// Post posts form, as it is, to path.
func (b *Client) Post(path string, form url.Values, header http.Header) (int, string) {
	b.t.Helper()
	return b.Do(http.MethodPost, path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), header)
}

// PostFrom posts form to path with the form token of the page at from,
// as submitting that page's form does.
func (b *Client) PostFrom(from, path string, form url.Values) (int, string) {
	b.t.Helper()
	_, page := b.Get(from)
	form.Set("csrf", FormToken(b.t, page))
	return b.Post(path, form, nil)
}

var formToken = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// FormToken is the form token on page (webui.Protect's).
func FormToken(t testing.TB, page string) string {
	t.Helper()
	m := formToken.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token on the page:\n%s", page)
	}
	return m[1]
}

// Cookies are the cookies the client would send to path.
func (b *Client) Cookies(path string) []*http.Cookie {
	u, err := url.Parse(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.c.Jar.Cookies(u)
}

// SetCookies makes the client send cookies to path, as a browser that
// kept them (or an attacker who copied them) would.
func (b *Client) SetCookies(path string, cookies []*http.Cookie) {
	u, err := url.Parse(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	b.c.Jar.SetCookies(u, cookies)
}
