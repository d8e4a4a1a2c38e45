// Package console is the web console of a flowgen server (flowgen serve):
// server-rendered pages of jobs, dead letters and flows, over the same
// jobapi.Service the command line uses, so every action a page offers is
// the API's action, recorded in the job's history like the CLI's. Pages
// read without JavaScript; every action asks for confirmation on a page
// of its own and posts a form guarded against cross-site requests
// (webui.Protect).
package console

import (
	"embed"
	"errors"
	"log/slog"
	"net/http"

	"github.com/flowgen-dev/flowgen/internal/webui"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
)

//go:embed templates
var templates embed.FS

// Flows is what the console reads of the flows a server runs:
// *engine.Engine implements it.
type Flows interface {
	Flows() []runtime.FlowVersion
	FlowGraph(ref string) (runtime.FlowGraph, error)
}

var _ Flows = (*engine.Engine)(nil)

// Options configure New.
type Options struct {
	// Flows, when set, gives the flows pages, the graphs and the data
	// classes that mask sensitive inputs and outputs; without it the
	// console shows jobs only, unmasked.
	Flows Flows
	// Actor is who the console's decisions are recorded as (a
	// checkpoint decision's By); default "console".
	Actor string
	// Log receives one audit line per action taken.
	Log *slog.Logger
}

// console serves the pages.
type console struct {
	svc   jobapi.Service
	opts  Options
	site  *webui.Site
	audit *slog.Logger
}

// New returns the console's handler, to be served at the root of a
// host (its links start with "/"). It wraps itself in webui.Protect.
func New(svc jobapi.Service, opts Options) (http.Handler, error) {
	if opts.Actor == "" {
		opts.Actor = "console"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	nav := []webui.Link{{Label: "Jobs", Href: "/jobs"}, {Label: "Dead letters", Href: "/deadletters"}}
	if opts.Flows != nil {
		nav = append(nav, webui.Link{Label: "Flows", Href: "/flows"})
	}
	site, err := webui.NewSite("flowgen", "", nav, opts.Log, templates, "templates/*.tmpl")
	if err != nil {
		return nil, err
	}
	c := &console{svc: svc, opts: opts, site: site, audit: opts.Log.With("audit", "console")}
	mux := http.NewServeMux()
	mux.Handle("GET "+webui.StaticPrefix, webui.Static())
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/jobs", http.StatusSeeOther) })
	mux.HandleFunc("GET /jobs", c.jobs)
	mux.HandleFunc("GET /jobs/{job}", c.job)
	mux.HandleFunc("GET /jobs/{job}/confirm", c.confirmJobAction)
	mux.HandleFunc("POST /jobs/{job}/{action}", c.jobAction)
	mux.HandleFunc("GET /deadletters", c.deadLetters)
	mux.HandleFunc("GET /deadletters/{id}/confirm", c.confirmDeadLetterAction)
	mux.HandleFunc("POST /deadletters/{id}/{action}", c.deadLetterAction)
	if opts.Flows != nil {
		mux.HandleFunc("GET /flows", c.flows)
		mux.HandleFunc("GET /flows/{name}", c.flow)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.site.Error(w, r, http.StatusNotFound, errors.New("there is no page at "+r.URL.Path))
	})
	return webui.Protect(mux), nil
}

// fail renders err as a page with the status its kind calls for.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, runtime.ErrUnknownFlow), errors.Is(err, runtime.ErrFlowVersionMissing):
		status = http.StatusNotFound
	case errors.Is(err, runtime.ErrBadQuery), errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, runtime.ErrDeadLetterTaken):
		status = http.StatusConflict
	case errors.Is(err, runtime.ErrUndecodable):
		status = http.StatusUnprocessableEntity
	}
	c.site.Error(w, r, status, err)
}

// errBadRequest marks a request the console cannot answer as asked.
var errBadRequest = errors.New("bad request")
