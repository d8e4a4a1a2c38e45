package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime"
)

// countCap bounds how many jobs of one state the flows pages count; past
// it they say "1000+".
const countCap = 1000

// stateCount is how many jobs of a flow are in one state.
type stateCount struct {
	Flow  string
	State string
	Count string
}

// flowRow is one served definition on the flows page.
type flowRow struct {
	runtime.FlowVersion
	Short  string
	Counts []stateCount
}

// flows lists the definitions the server runs, with job counts per state.
func (c *console) flows(w http.ResponseWriter, r *http.Request) {
	var rows []flowRow
	counted := map[string][]stateCount{}
	for _, fv := range c.opts.Flows.Flows() {
		counts, ok := counted[fv.Name]
		if !ok {
			var err error
			if counts, err = c.count(r.Context(), fv.Name); err != nil {
				c.fail(w, r, err)
				return
			}
			counted[fv.Name] = counts
		}
		rows = append(rows, flowRow{FlowVersion: fv, Short: short(fv.Hash), Counts: counts})
	}
	c.site.Render(w, r, http.StatusOK, "flows", "Flows", "Flows", struct {
		States []string
		Flows  []flowRow
	}{runtime.JobStates, rows})
}

// count counts flow's top-level jobs in each state in one walk of its
// listing, which stops after countCap jobs per state: a count past
// countCap, or any count of a walk that stopped before the last job,
// says "+".
func (c *console) count(ctx context.Context, flow string) ([]stateCount, error) {
	n := map[string]int{}
	after, complete := "", false
	for walked := 0; walked < countCap*len(runtime.JobStates); {
		list, err := c.svc.Jobs(ctx, runtime.JobQuery{Flow: flow, Limit: countCap, After: after})
		if err != nil {
			return nil, fmt.Errorf("count the jobs of %s: %w", flow, err)
		}
		for _, j := range list.Jobs {
			n[string(j.State)]++ // a waiting or paused job is also running
			if len(j.Waiting) > 0 {
				n["waiting"]++
			}
			if j.Paused {
				n["paused"]++
			}
		}
		walked += len(list.Jobs)
		if list.Next == "" {
			complete = true
			break
		}
		after = list.Next
	}
	var out []stateCount
	for _, state := range runtime.JobStates {
		s := strconv.Itoa(min(n[state], countCap))
		if n[state] > countCap || !complete {
			s += "+"
		}
		out = append(out, stateCount{Flow: flow, State: state, Count: s})
	}
	return out, nil
}

// flowPage is the data of one definition's page.
type flowPage struct {
	Graph   runtime.FlowGraph
	Short   string
	Drawing drawing
	Counts  []stateCount
	Others  []runtime.FlowVersion
}

// flow shows one definition: its graph drawn, its nodes and edges, and
// its jobs per state. ?definition=HASH16 picks a version; the newest
// otherwise.
func (c *console) flow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ref := name
	if def := r.URL.Query().Get("definition"); def != "" {
		ref += "#" + def
	}
	g, err := c.opts.Flows.FlowGraph(ref)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	counts, err := c.count(r.Context(), g.Name)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := flowPage{Graph: g, Short: short(g.Hash), Drawing: layout(g), Counts: counts}
	for _, fv := range c.opts.Flows.Flows() {
		if fv.Name == g.Name && fv.Hash != g.Hash {
			page.Others = append(page.Others, fv)
		}
	}
	c.site.Render(w, r, http.StatusOK, "flow", "Flow "+g.Name, "Flows", page)
}

// short is a definition's content hash as jobs name it: 16 digits.
func short(hash string) string { return hash[:min(16, len(hash))] }
