// Package webui is what flowgen's web pages share: the page frame (one
// layout, one style sheet, no build step), protection of every form
// against cross-site requests, and the security headers every page
// carries. The job console (serve/console) and the registry's catalogue
// pages are built on it.
package webui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

//go:embed static templates
var files embed.FS

// StaticPrefix is the path under which Static serves the style sheet and
// the script every page links.
const StaticPrefix = "/static/"

// Static serves the shared assets under StaticPrefix.
func Static() http.Handler {
	sub, _ := fs.Sub(files, "static")
	fsrv := http.StripPrefix(StaticPrefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A path no file can have (not UTF-8, say) is not found, not a
		// server error.
		if !utf8.ValidString(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}

// Link is an entry of a site's navigation.
type Link struct {
	Label, Href string
}

// Site is one web application's pages: its templates parsed with the
// shared layout, and its navigation.
type Site struct {
	// Name is shown in the header and in every page's title.
	Name string
	Nav  []Link
	// Base is the path the site is served under ("" or "/ui"); links the
	// layout writes start with it.
	Base string
	Log  *slog.Logger
	tmpl *template.Template
}

// NewSite parses the layout and the site's own templates (patterns in
// fsys); each page template defines "content" under its own name, as
// {{define "jobs"}}…{{end}}, and is rendered through Render.
func NewSite(name, base string, nav []Link, log *slog.Logger, fsys fs.FS, patterns ...string) (*Site, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := template.New("layout").Funcs(Funcs(base))
	t, err := t.ParseFS(files, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("webui layout: %w", err)
	}
	if len(patterns) > 0 {
		if t, err = t.ParseFS(fsys, patterns...); err != nil {
			return nil, fmt.Errorf("webui %s templates: %w", name, err)
		}
	}
	return &Site{Name: name, Nav: nav, Base: base, Log: log, tmpl: t}, nil
}

// Frame is what the layout receives: the page's own data under Data.
type Frame struct {
	Site  *Site
	Title string
	// Current is the navigation entry the page belongs to.
	Current string
	CSRF    string
	// Flash is a one-line notice at the top of the page (after an
	// action).
	Flash string
	Data  any
}

// Render writes page (a template name) with data in the layout, with
// status. A template error becomes a 500 without half a page written.
func (s *Site) Render(w http.ResponseWriter, r *http.Request, status int, page, title, current string, data any) {
	var buf bytes.Buffer
	f := Frame{Site: s, Title: title, Current: current, CSRF: Token(r), Flash: r.URL.Query().Get("done"), Data: data}
	if err := s.tmpl.ExecuteTemplate(&buf, page, f); err != nil {
		s.Log.Error("web page", "page", page, "err", err)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// Error renders a page that says what went wrong, with status.
func (s *Site) Error(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.Render(w, r, status, "error", http.StatusText(status), "", err.Error())
}

// Funcs are the template functions the layout and every site's pages
// may use.
func Funcs(base string) template.FuncMap {
	return template.FuncMap{
		"href": func(parts ...string) string { return base + strings.Join(parts, "") },
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		},
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
		"took": func(from, to time.Time) string {
			if from.IsZero() || to.IsZero() {
				return ""
			}
			return Duration(to.Sub(from))
		},
	}
}

// Duration writes d for a reader: 850µs, 12.4ms, 3.2s, 4m05s, 2h03m.
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Duration(-d)
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
