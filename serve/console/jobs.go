package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/internal/webui"
	"github.com/flowgen-dev/flowgen/runtime"
)

// pageSize is how many jobs a listing page shows.
const pageSize = 25

// localTime is the layout of an <input type="datetime-local"> value; the
// console reads and writes it in UTC.
const localTime = "2006-01-02T15:04"

// jobFilter is the listing's form, as the reader filled it in.
type jobFilter struct {
	State, Flow, Version, Since, Until, Key, Where string
}

// jobsPage is the data of the jobs listing.
type jobsPage struct {
	Filter jobFilter
	States []string
	Flows  []string
	Jobs   []runtime.JobSummary
	// Next is the link to the following page; "" on the last.
	Next string
	// Refresh reloads a listing that shows running jobs.
	Refresh int
}

// jobs lists the jobs newest first, filtered by the form and paginated.
func (c *console) jobs(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	f := jobFilter{State: v.Get("state"), Flow: v.Get("flow"), Version: strings.TrimSpace(v.Get("version")), Since: v.Get("since"), Until: v.Get("until"), Key: strings.TrimSpace(v.Get("key")), Where: strings.TrimSpace(v.Get("where"))}
	if job, err := runtime.ParseJobID(f.Key); err == nil {
		http.Redirect(w, r, "/jobs/"+job.String(), http.StatusSeeOther) // a job id: go to it
		return
	}
	q, err := f.query()
	if err != nil {
		c.fail(w, r, err)
		return
	}
	q.After, q.Limit = v.Get("after"), pageSize
	list, err := c.svc.Jobs(r.Context(), q)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := jobsPage{Filter: f, States: runtime.JobStates, Jobs: list.Jobs}
	if c.opts.Flows != nil {
		for _, fv := range c.opts.Flows.Flows() {
			if !slices.Contains(page.Flows, fv.Name) {
				page.Flows = append(page.Flows, fv.Name)
			}
		}
	}
	if list.Next != "" {
		next := url.Values{}
		for k, vs := range v {
			next[k] = vs
		}
		next.Set("after", list.Next)
		page.Next = "/jobs?" + next.Encode()
	}
	for _, j := range list.Jobs {
		if j.State == runtime.StateRunning {
			page.Refresh = 5
		}
	}
	c.site.Render(w, r, http.StatusOK, "jobs", "Jobs", "Jobs", page)
}

// query is the job query the filter asks for.
func (f jobFilter) query() (runtime.JobQuery, error) {
	q := runtime.JobQuery{State: f.State, Flow: f.Flow, Version: f.Version, Key: f.Key}
	for _, t := range []struct {
		name, value string
		dst         *time.Time
	}{{"started from", f.Since, &q.Since}, {"started before", f.Until, &q.Until}} {
		if t.value == "" {
			continue
		}
		at, err := time.Parse(localTime, t.value)
		if err != nil {
			return q, fmt.Errorf("%w: %s %q: want a date and time as 2026-11-24T15:04 (UTC)", errBadRequest, t.name, t.value)
		}
		*t.dst = at
	}
	if f.Where != "" {
		path, value, ok := strings.Cut(f.Where, "=")
		if !ok || strings.TrimSpace(path) == "" {
			return q, fmt.Errorf("%w: input field %q: want path=value, as customer.id=42", errBadRequest, f.Where)
		}
		q.Where = map[string]string{strings.TrimSpace(path): strings.TrimSpace(value)}
	}
	return q, q.Check()
}

// jobPage is the data of a job's page.
type jobPage struct {
	In      *runtime.Inspection
	Waiting []string
	Paused  bool
	// Activations is the activation tree, flattened in display order
	// with each activation's depth.
	Activations []activationRow
	Timeline    []timelineRow
	Input       shown
	Graph       *runtime.FlowGraph
	Refresh     int
}

// activationRow is one activation of the tree.
type activationRow struct {
	*runtime.ActivationView
	Depth     int
	Kind      string
	ErrorKind string
	Output    shown
}

// timelineRow is one history event with its time from the job's start
// and how long the activation took to reach it.
type timelineRow struct {
	runtime.HistoryEvent
	Offset string
	Took   string
}

// job shows one job: its facts, actions, activations, history, input and
// outputs.
func (c *console) job(w http.ResponseWriter, r *http.Request) {
	job, ok := c.jobID(w, r)
	if !ok {
		return
	}
	in, err := c.svc.Inspect(r.Context(), job)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := jobPage{In: in}
	if !in.Status.Done() {
		page.Refresh = 3
		if page.Waiting, err = c.svc.Waiting(r.Context(), job); err != nil {
			c.fail(w, r, err)
			return
		}
		page.Paused = pausedByHistory(in.History)
	}
	if c.opts.Flows != nil && in.Flow != "" {
		ref := in.Flow
		if in.Definition != "" {
			ref += "#" + in.Definition
		}
		if g, err := c.opts.Flows.FlowGraph(ref); err == nil {
			page.Graph = &g
		}
	}
	m := masker{graph: page.Graph}
	page.Input = m.input(in.Input)
	var walk func([]*runtime.ActivationView, int)
	walk = func(views []*runtime.ActivationView, depth int) {
		for _, v := range views {
			row := activationRow{ActivationView: v, Depth: depth, Kind: m.kind(v.Node), Output: m.output(v.Node, v.Output)}
			if kind, _, ok := strings.Cut(v.Error, ": "); ok && v.Error != "" {
				row.ErrorKind = kind
			}
			page.Activations = append(page.Activations, row)
			walk(v.Children, depth+1)
		}
	}
	walk(in.Tree, 0)
	start := in.Status.Started
	for _, ev := range in.History {
		row := timelineRow{HistoryEvent: ev}
		if !start.IsZero() {
			row.Offset = "+" + webui.Duration(ev.At.Sub(start))
		}
		if !ev.Since.IsZero() {
			row.Took = webui.Duration(ev.At.Sub(ev.Since))
		}
		page.Timeline = append(page.Timeline, row)
	}
	c.site.Render(w, r, http.StatusOK, "job", "Job "+in.Job, "Jobs", page)
}

// pausedByHistory reports whether the job's last pause or resume event
// is a pause.
func pausedByHistory(h []runtime.HistoryEvent) bool {
	paused := false
	for _, ev := range h {
		switch ev.Event {
		case runtime.EventPaused:
			paused = true
		case runtime.EventResumed:
			paused = false
		}
	}
	return paused
}

// jobID parses the {job} of the path, answering 404 when it is no job id.
func (c *console) jobID(w http.ResponseWriter, r *http.Request) (runtime.JobID, bool) {
	job, err := runtime.ParseJobID(r.PathValue("job"))
	if err != nil {
		c.site.Error(w, r, http.StatusNotFound, fmt.Errorf("%q is not a job id: %v", r.PathValue("job"), err))
		return job, false
	}
	return job, true
}

// shown is a JSON value ready to show: indented, with its sensitive
// fields' values replaced by their class; Masked counts them.
type shown struct {
	Text   string
	Masked int
}
