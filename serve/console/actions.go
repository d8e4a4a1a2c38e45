package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/flowgen-dev/flowgen/runtime"
)

// jobAction is one thing a reader may do to a job.
type jobAction struct {
	Name string // the path segment: pause, resume, kill, approve, reject
	// Verb and Warning are what the confirmation page says.
	Verb, Warning string
	// Done is the notice after it succeeded.
	Done   string
	Danger bool
	// Note names the optional text field the confirmation asks for.
	Note string
}

var jobActions = []jobAction{
	{Name: "pause", Done: "Paused", Verb: "Pause", Warning: "No new activation of the job starts until it is resumed; those running finish."},
	{Name: "resume", Done: "Resumed", Verb: "Resume", Warning: "The job's parked activations go on."},
	{Name: "kill", Done: "Killed", Verb: "Kill", Warning: "The job ends now as killed: waiting and queued activations are canceled, and what ran is not undone.", Danger: true, Note: "Reason"},
	{Name: "approve", Done: "Approved", Verb: "Approve", Warning: "The checkpoint lets the job go on along its approved edge.", Note: "Note"},
	{Name: "reject", Done: "Rejected", Verb: "Reject", Warning: "The checkpoint sends the job along its rejected edge.", Danger: true, Note: "Note"},
}

func findJobAction(name string) (jobAction, bool) {
	i := slices.IndexFunc(jobActions, func(a jobAction) bool { return a.Name == name })
	if i < 0 {
		return jobAction{}, false
	}
	return jobActions[i], true
}

// confirmPage is the data of an action's confirmation page.
type confirmPage struct {
	Action jobAction
	// What names what the action applies to, Post is the form's target
	// and Back the page to return to.
	What, Post, Back string
	Node             string
}

// confirmJobAction asks the reader to confirm an action on a job.
func (c *console) confirmJobAction(w http.ResponseWriter, r *http.Request) {
	job, ok := c.jobID(w, r)
	if !ok {
		return
	}
	a, ok := findJobAction(r.URL.Query().Get("action"))
	if !ok {
		c.fail(w, r, fmt.Errorf("%w: unknown action %q", errBadRequest, r.URL.Query().Get("action")))
		return
	}
	node := r.URL.Query().Get("node")
	what := "job " + job.String()
	if a.Name == "approve" || a.Name == "reject" {
		if node == "" {
			c.fail(w, r, fmt.Errorf("%w: %s needs the checkpoint node", errBadRequest, a.Name))
			return
		}
		what = "checkpoint " + node + " of job " + job.String()
	}
	page := confirmPage{Action: a, What: what, Post: "/jobs/" + job.String() + "/" + a.Name, Back: "/jobs/" + job.String(), Node: node}
	c.site.Render(w, r, http.StatusOK, "confirm", a.Verb+" "+what+"?", "Jobs", page)
}

// jobAction takes a confirmed action through the service, as the CLI
// would, logs it for audit and returns to the job's page.
func (c *console) jobAction(w http.ResponseWriter, r *http.Request) {
	job, ok := c.jobID(w, r)
	if !ok {
		return
	}
	a, ok := findJobAction(r.PathValue("action"))
	if !ok {
		c.fail(w, r, fmt.Errorf("%w: unknown action %q", errBadRequest, r.PathValue("action")))
		return
	}
	ctx, note, node := r.Context(), r.PostFormValue("note"), r.PostFormValue("node")
	var err error
	done := a.Done + "."
	if node != "" {
		done = a.Done + " at checkpoint " + node + "."
	}
	switch a.Name {
	case "pause":
		err = c.svc.Pause(ctx, job)
	case "resume":
		err = c.svc.Resume(ctx, job)
	case "kill":
		reason := note
		if reason == "" {
			reason = "killed from the console"
		}
		err = c.svc.Kill(ctx, job, reason)
	case "approve", "reject":
		var n int
		n, err = c.svc.Signal(ctx, job, node, runtime.Decision{Approved: a.Name == "approve", By: c.opts.Actor, Note: note})
		if err == nil && n == 0 {
			err = fmt.Errorf("checkpoint %s of job %s waits for no decision", node, job)
		}
	}
	c.audit.Info("console action", "action", a.Name, "job", job.String(), "node", node, "by", c.opts.Actor, "note", note, "ok", err == nil)
	if err != nil {
		c.fail(w, r, fmt.Errorf("%s %s: %w", a.Name, job, err))
		return
	}
	http.Redirect(w, r, "/jobs/"+job.String()+"?done="+url.QueryEscape(done), http.StatusSeeOther)
}

// deadLetterActions are what a reader may do to a dead letter.
var deadLetterActions = []jobAction{
	{Name: "requeue", Done: "Requeued", Verb: "Requeue", Warning: "The activation is delivered again, as a new message, to a worker that has its flow."},
	{Name: "fail", Done: "Failed", Verb: "Fail", Warning: "The activation fails as dead-lettered and its job goes on from that failure (its error edges, or compensation).", Danger: true, Note: "Reason"},
}

// deadLetterID parses the {id} of the path.
func (c *console) deadLetterID(w http.ResponseWriter, r *http.Request) (runtime.MessageID, jobAction, bool) {
	id, err := runtime.ParseMessageID(r.PathValue("id"))
	if err != nil {
		c.site.Error(w, r, http.StatusNotFound, fmt.Errorf("%q is not a dead letter id: %v", r.PathValue("id"), err))
		return id, jobAction{}, false
	}
	name := r.PathValue("action")
	if name == "" {
		name = r.URL.Query().Get("action")
	}
	i := slices.IndexFunc(deadLetterActions, func(a jobAction) bool { return a.Name == name })
	if i < 0 {
		c.fail(w, r, fmt.Errorf("%w: unknown action %q", errBadRequest, name))
		return id, jobAction{}, false
	}
	return id, deadLetterActions[i], true
}

// confirmDeadLetterAction asks the reader to confirm a requeue or fail.
func (c *console) confirmDeadLetterAction(w http.ResponseWriter, r *http.Request) {
	id, a, ok := c.deadLetterID(w, r)
	if !ok {
		return
	}
	what := "dead letter " + id.String()
	page := confirmPage{Action: a, What: what, Post: "/deadletters/" + id.String() + "/" + a.Name, Back: "/deadletters"}
	c.site.Render(w, r, http.StatusOK, "confirm", a.Verb+" "+what+"?", "Dead letters", page)
}

// deadLetterAction requeues or fails a dead letter.
func (c *console) deadLetterAction(w http.ResponseWriter, r *http.Request) {
	id, a, ok := c.deadLetterID(w, r)
	if !ok {
		return
	}
	var err error
	note := r.PostFormValue("note")
	if a.Name == "requeue" {
		_, err = c.svc.RequeueDeadLetter(r.Context(), id)
	} else {
		if note == "" {
			note = "failed from the console"
		}
		_, err = c.svc.FailDeadLetter(r.Context(), id, note)
	}
	c.audit.Info("console action", "action", a.Name, "deadLetter", id.String(), "by", c.opts.Actor, "note", note, "ok", err == nil)
	if err != nil {
		if errors.Is(err, runtime.ErrDeadLetterTaken) {
			err = fmt.Errorf("dead letter %s was already taken: %w", id, err)
		}
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/deadletters?done="+url.QueryEscape(a.Done+" "+id.String()+"."), http.StatusSeeOther)
}

// deadLetters lists the dead letters, oldest first.
func (c *console) deadLetters(w http.ResponseWriter, r *http.Request) {
	list, err := c.svc.DeadLetters(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.site.Render(w, r, http.StatusOK, "deadletters", "Dead letters", "Dead letters", list)
}
