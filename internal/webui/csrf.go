package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
)

// csrfCookie holds the browser's form token; every form posts it back
// in the field CSRFField.
const (
	csrfCookie = "flowgen_csrf"
	// CSRFField is the form field that carries the token (Frame.CSRF).
	CSRFField = "csrf"
)

type tokenKey struct{}

// Token is the form token of the request Protect let through; "" outside
// Protect.
func Token(r *http.Request) string {
	s, _ := r.Context().Value(tokenKey{}).(string)
	return s
}

// Protect guards next against cross-site requests and sets the security
// headers of every page:
//
//   - a request that changes anything (any method but GET, HEAD and
//     OPTIONS) must come from the same origin, by the browser's
//     Sec-Fetch-Site or Origin header (http.CrossOriginProtection), and
//     must carry in its form the token of the browser's cookie (double
//     submit): a 403 otherwise;
//   - pages may load scripts, styles and images from their own origin
//     only, may not be framed, and send no Referer.
func Protect(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	deny := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused: this form was not sent from this site's own page (cross-site request)", http.StatusForbidden)
	})
	cop.SetDenyHandler(deny)
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		token := ""
		if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
			token = c.Value
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if token == "" {
				raw := make([]byte, 32)
				rand.Read(raw)
				token = base64.RawURLEncoding.EncodeToString(raw)
				http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
		default:
			sent := r.PostFormValue(CSRFField)
			if token == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
				http.Error(w, "refused: the form's token does not match this browser's; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenKey{}, token)))
	}))
}
