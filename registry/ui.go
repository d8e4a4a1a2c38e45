package registry

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/flowgen-dev/flowgen/internal/webui"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// The catalogue pages (/ui/) show the registry to a browser: search,
// each connector's versions, each version's certification evidence,
// signature and SBOM status, and whether it would pass a pull policy the
// reader pastes or uploads. They answer to the same tokens as the API: a
// reader signs in by pasting a token, which the server keeps in a session
// (uisession.go) whose random id the browser holds in an HttpOnly,
// SameSite=Strict cookie scoped to /ui/; pages need a token
// that may pull, and see what that token may see (its pull policy
// included); deprecating and yanking need the namespace's publish scope,
// ask for confirmation and are audited like the API's. Forms are guarded
// by webui.Protect. The API itself never reads the cookie, so no page of
// another site can drive it through a browser.

//go:embed uitemplates
var uiTemplates embed.FS

// uiCookie holds a signed-in reader's session id.
const uiCookie = "flowgen_registry_session"

// loginReasons are what the sign-in page may say, by the code in its
// query: it never shows text a link carries.
var loginReasons = map[string]string{
	"signin":    "Sign in with a registry token to read the catalogue.",
	"ended":     "Your session ended (signed out, unused for 12 hours, or its token expired or was revoked): sign in again.",
	"signedout": "Signed out.",
}

// uiRoutes adds the catalogue pages to m.
func (s *Server) uiRoutes(m *http.ServeMux) error {
	site, err := webui.NewSite("flowgen registry", "/ui", []webui.Link{{Label: "Search", Href: "/ui/"}, {Label: "Sign in", Href: "/ui/login"}},
		s.log, uiTemplates, "uitemplates/*.tmpl")
	if err != nil {
		return err
	}
	s.site = site
	const v = "/ui/connectors/{namespace}/{connector}/versions/{version}"
	ui := http.NewServeMux()
	ui.Handle("GET /ui/static/", http.StripPrefix("/ui", webui.Static()))
	ui.HandleFunc("GET /ui/login", s.uiLoginPage)
	ui.HandleFunc("POST /ui/login", s.uiLogin)
	ui.HandleFunc("POST /ui/logout", s.uiLogout)
	ui.HandleFunc("GET /ui/{$}", s.signedIn(s.uiSearch))
	ui.HandleFunc("GET /ui/connectors/{namespace}/{connector}", s.signedIn(s.uiConnector))
	ui.HandleFunc("GET "+v, s.signedIn(s.uiVersion))
	ui.HandleFunc("POST "+v+"/policy", s.signedIn(s.uiPolicy))
	ui.HandleFunc("GET "+v+"/confirm", s.signedIn(s.uiConfirm))
	ui.HandleFunc("POST "+v+"/{action}", s.signedIn(s.uiMark))
	ui.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		s.site.Error(w, r, http.StatusNotFound, errors.New("there is no page at "+r.URL.Path))
	})
	m.Handle("/ui/", s.observed(webui.Protect(ui)))
	return nil
}

// observed counts and logs the pages' requests as handle does the API's,
// under the route "UI".
func (s *Server) observed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body := &eofReader{r: r.Body}
		r.Body = body
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, req: r, body: body}
		next.ServeHTTP(rec, r)
		elapsed := time.Since(start)
		s.metrics.observe("UI", rec.status, elapsed)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", "UI"),
			slog.Int("status", rec.status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", elapsed),
			slog.String("remote", r.RemoteAddr))
	})
}

// uiHandler is a page handler with its signed-in reader.
type uiHandler func(w http.ResponseWriter, r *http.Request, p *principal)

// signedIn resolves the reader from the cookie: pages need a token that
// may pull, else the sign-in page.
func (s *Server) signedIn(next uiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		why := "signin"
		var p *principal
		var err error
		if c, cerr := r.Cookie(uiCookie); cerr == nil {
			why = "ended"
			if secret, ok := s.uiSessions.secret(c.Value, time.Now()); ok {
				p, err = s.principalOf(r.Context(), secret)
				var ae *authError
				if p == nil && (err == nil || errors.As(err, &ae)) {
					s.uiSessions.end(c.Value) // the token no longer signs anyone in
				}
			}
		}
		if err == nil && p == nil {
			err = &authError{http.StatusUnauthorized, loginReasons[why]}
		}
		if err == nil {
			err = needPull(p)
		}
		if err != nil {
			var ae *authError
			if errors.As(err, &ae) && ae.status == http.StatusUnauthorized {
				http.Redirect(w, r, "/ui/login?why="+why+"&next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			} else {
				s.uiFail(w, r, err)
			}
			return
		}
		next(w, r, p)
	}
}

// uiFail renders err as a page with the status the API would answer.
func (s *Server) uiFail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var ae *authError
	var ce *api.Error
	switch {
	case errors.As(err, &ae):
		status = ae.status
	case errors.As(err, &ce):
		status = ce.Status
	case errors.Is(err, meta.ErrNotFound):
		status = http.StatusNotFound
	}
	s.site.Error(w, r, status, err)
}

// loginPage is the data of the sign-in page.
type loginPage struct {
	Why, Next string
}

func (s *Server) uiLoginPage(w http.ResponseWriter, r *http.Request) {
	s.site.Render(w, r, http.StatusOK, "login", "Sign in", "Sign in", loginPage{Why: loginReasons[r.URL.Query().Get("why")], Next: safeNext(r.URL.Query().Get("next"))})
}

// uiLogin checks the pasted token and keeps it in the browser's cookie.
func (s *Server) uiLogin(w http.ResponseWriter, r *http.Request) {
	secret := r.PostFormValue("token")
	p, err := s.principalOf(r.Context(), secret)
	if err == nil && p == nil {
		err = &authError{http.StatusUnauthorized, "paste a registry token"}
	}
	if err == nil {
		err = needPull(p)
	}
	if err != nil {
		s.log.Info("ui sign-in refused", "err", err, "remote", r.RemoteAddr)
		why, status := "The registry could not check the token; try again shortly.", http.StatusServiceUnavailable
		var ae *authError
		if errors.As(err, &ae) {
			why, status = ae.msg, http.StatusUnauthorized // what the registry says of the token
		}
		s.site.Render(w, r, status, "login", "Sign in", "Sign in", loginPage{Why: why, Next: safeNext(r.PostFormValue("next"))})
		return
	}
	id := s.uiSessions.start(secret, time.Now())
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: id, Path: "/ui/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	s.log.Info("ui sign-in", "caller", p.name(), "remote", r.RemoteAddr)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (s *Server) uiLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(uiCookie); err == nil {
		s.uiSessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/login?why=signedout", http.StatusSeeOther)
}

// safeNext keeps a return address on this site's pages: an address
// elsewhere (an open redirect) becomes the start page.
func safeNext(next string) string {
	u, err := url.Parse(next)
	if next == "" || err != nil || u.Scheme != "" || u.Host != "" || len(u.Path) < 4 || u.Path[:4] != "/ui/" {
		return "/ui/"
	}
	return u.RequestURI()
}

// uiPath is the page of a version, or of a connector when k has no
// version.
func uiPath(k meta.Key) string {
	p := fmt.Sprintf("/ui/connectors/%s/%s", url.PathEscape(k.Namespace), url.PathEscape(k.Connector))
	if k.Version != "" {
		p += "/versions/" + url.PathEscape(k.Version)
	}
	return p
}
