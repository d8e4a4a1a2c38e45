package jobapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
)

// A browser reaches the web console (HandlerOptions.Console) with a
// session cookie, which it gets by opening the console address the
// server prints: /login?token=TOKEN with the API token. The cookie holds
// a value derived from the token, not the token, and is HttpOnly and
// SameSite=Strict; the console guards its own forms (webui.Protect).

// sessionCookie is the console's session cookie.
const sessionCookie = "flowgen_session"

// ConsoleURL is the address that opens the web console of the server at
// ep and logs the browser in.
func (ep Endpoint) ConsoleURL() string {
	return "http://" + ep.Addr + "/login?token=" + url.QueryEscape(ep.Token)
}

// session is the session cookie's value for token.
func session(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("flowgen console session"))
	return hex.EncodeToString(m.Sum(nil))
}

// login checks the token and gives the browser its session cookie.
func (h *handler) login(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(h.opts.Token)) != 1 {
		consoleRefusal(w, "That console address has a wrong or old token.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: session(h.opts.Token), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, "/jobs", http.StatusSeeOther)
}

// signedIn serves next to a browser with the session cookie, or to a
// client with the API token.
func (h *handler) signedIn(next http.Handler) http.Handler {
	want, bearer := []byte(session(h.opts.Token)), []byte("Bearer "+h.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if (err == nil && subtle.ConstantTimeCompare([]byte(c.Value), want) == 1) ||
			subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), bearer) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		consoleRefusal(w, "This browser is not signed in to the console.")
	})
}

// consoleRefusal is the 401 page of the console.
func consoleRefusal(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · flowgen</title></head>
<body><main><h1>Sign in to the flowgen console</h1><p>%s</p>
<p>Open the console address <code>flowgen serve</code> printed when it started (it ends in <code>/login?token=…</code>). The token is also in the endpoint file next to the store.</p></main></body></html>
`, why)
}
