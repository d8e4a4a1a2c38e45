package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/internal/browsertest"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/serve/jobapi"
)

// TestConsolePages walks the console as a reader would, on both stores:
// sign in, list and filter jobs, open one, approve its checkpoint through
// the confirmation page, and see it finish; the flow's page draws its
// graph.
func TestConsolePages(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			r := newRig(t, st.open(t))
			waiting := r.start(order{Order: "o-1", Email: "ann@example.com"})
			r.awaitWaiting(waiting)
			other := r.start(order{Order: "o-2", Email: "bob@example.com"})
			r.awaitWaiting(other)
			b := r.browser()

			if code, _ := b.Get("/jobs"); code != http.StatusUnauthorized {
				t.Fatalf("GET /jobs before signing in: %d, want 401", code)
			}
			if code, _ := b.Get("/login?token=wrong"); code != http.StatusUnauthorized {
				t.Fatalf("a wrong token signs in: %d", code)
			}
			if code, loc := b.Get("/login?token=" + r.token); code != http.StatusSeeOther || loc != "/jobs" {
				t.Fatalf("sign in: %d %s", code, loc)
			}

			code, page := b.Get("/jobs")
			if code != http.StatusOK || !strings.Contains(page, waiting.String()) || !strings.Contains(page, other.String()) {
				t.Fatalf("jobs page (%d) lacks the jobs:\n%s", code, page)
			}
			if strings.Index(page, other.String()) > strings.Index(page, waiting.String()) {
				t.Error("the jobs page does not list the newest job first")
			}
			_, page = b.Get("/jobs?where=order%3Do-1")
			if !strings.Contains(page, waiting.String()) || strings.Contains(page, other.String()) {
				t.Errorf("filtering by input field order=o-1 does not keep exactly job %s:\n%s", waiting, page)
			}
			_, page = b.Get("/jobs?version=2.0.0")
			if strings.Contains(page, waiting.String()) {
				t.Error("a job of version 1.0.0 is listed under version 2.0.0")
			}
			_, page = b.Get("/jobs?version=1.0.0&state=waiting")
			if !strings.Contains(page, waiting.String()) {
				t.Error("the job of version 1.0.0 is not listed under it")
			}
			_, page = b.Get("/jobs?state=succeeded")
			if strings.Contains(page, waiting.String()) {
				t.Error("a waiting job is listed as succeeded")
			}
			if code, _ := b.Get("/jobs?since=yesterday"); code != http.StatusBadRequest {
				t.Errorf("a bad date: %d, want 400", code)
			}
			if code, loc := b.Get("/jobs?key=" + waiting.String()); code != http.StatusSeeOther || loc != "/jobs/"+waiting.String() {
				t.Errorf("searching a job id does not open the job: %d %s", code, loc)
			}

			code, page = b.Get("/jobs/" + waiting.String())
			if code != http.StatusOK {
				t.Fatalf("job page: %d\n%s", code, page)
			}
			for _, want := range []string{"lookup", "approve", "[pii.email]", "o-1", "started", "Approve approve"} {
				if !strings.Contains(page, want) {
					t.Errorf("job page lacks %q", want)
				}
			}
			if strings.Contains(page, "ann@example.com") {
				t.Error("the job page shows a pii-classed email")
			}

			code, page = b.Get("/jobs/" + waiting.String() + "/confirm?action=approve&node=approve")
			if code != http.StatusOK || !strings.Contains(page, "Approve checkpoint approve") {
				t.Fatalf("confirmation page (%d):\n%s", code, page)
			}
			token := browsertest.FormToken(t, page)
			post := "/jobs/" + waiting.String() + "/approve"
			if code, _ := b.Post(post, url.Values{"node": {"approve"}}, nil); code != http.StatusForbidden {
				t.Errorf("a post without the form token: %d, want 403", code)
			}
			crossSite := http.Header{"Sec-Fetch-Site": {"cross-site"}}
			if code, _ := b.Post(post, url.Values{"node": {"approve"}, "csrf": {token}}, crossSite); code != http.StatusForbidden {
				t.Errorf("a cross-site post: %d, want 403", code)
			}
			code, loc := b.Post(post, url.Values{"node": {"approve"}, "csrf": {token}, "note": {"looks fine"}}, nil)
			if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/jobs/"+waiting.String()) {
				t.Fatalf("approve: %d %s", code, loc)
			}
			out, err := jobapi.Await(context.Background(), r.engine, waiting, 20*time.Second)
			if err != nil || out.Status.State != runtime.StateSucceeded {
				t.Fatalf("the approved job did not succeed: %+v %v", out, err)
			}
			_, page = b.Get(loc)
			if !strings.Contains(page, "Approved at checkpoint approve.") || !strings.Contains(page, `id="job-state">succeeded`) {
				t.Errorf("the job page after approving:\n%s", page)
			}
			if !strings.Contains(page, "signaled") {
				t.Error("the history does not show the decision")
			}
			if !strings.Contains(r.audit.String(), "action=approve") || !strings.Contains(r.audit.String(), "by=tester") {
				t.Errorf("the approval is not in the audit log:\n%s", r.audit.String())
			}

			_, page = b.Get("/flows")
			if !strings.Contains(page, "orders") || !strings.Contains(page, "/jobs?flow=orders&amp;state=succeeded\">1<") {
				t.Errorf("flows page:\n%s", page)
			}
			_, page = b.Get("/flows/orders")
			for _, want := range []string{"<svg", `data-node="lookup"`, `data-node="ship"`, `data-from="approve" data-to="ship"`, "approved · ExactlyOnce", "test.ship@1.0.0"} {
				if !strings.Contains(page, want) {
					t.Errorf("flow page lacks %q", want)
				}
			}
			if code, _ := b.Get("/flows/nosuch"); code != http.StatusNotFound {
				t.Errorf("an unknown flow: %d, want 404", code)
			}
		})
	}
}

// TestConsoleActionsOnJobs pauses, resumes and kills a job from the
// console, each confirmed, and requeues nothing that is not a dead letter.
func TestConsoleActionsOnJobs(t *testing.T) {
	r := newRig(t, stores[0].open(t))
	job := r.start(order{Order: "o-9"})
	r.awaitWaiting(job)
	b := r.browser()
	b.Get("/login?token=" + r.token)
	act := func(action, want string) {
		t.Helper()
		code, loc := b.PostFrom("/jobs/"+job.String()+"/confirm?action="+action, "/jobs/"+job.String()+"/"+action, url.Values{"note": {"test " + action}})
		if code != http.StatusSeeOther {
			t.Fatalf("%s: %d %s", action, code, loc)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			// A kill ends the job's work asynchronously.
			_, page := b.Get(loc)
			if strings.Contains(page, want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s the page lacks %q:\n%s", action, want, page)
			}
		}
	}
	act("pause", "Resume")
	act("resume", "Pause")
	act("kill", `id="job-state">killed`)
	st, err := r.engine.Status(context.Background(), job)
	if err != nil || st.State != runtime.StateKilled {
		t.Fatalf("status after kill from the console: %+v %v", st, err)
	}
	if code, _ := b.Get("/jobs/" + job.String() + "/confirm?action=explode"); code != http.StatusBadRequest {
		t.Errorf("an unknown action: %d, want 400", code)
	}
	if code, _ := b.Get("/deadletters"); code != http.StatusOK {
		t.Errorf("dead letters page: %d", code)
	}
}

// TestConsoleDeadLetters requeues a dead letter from the console, and
// refuses to fail one whose task does not decode, as the CLI does.
func TestConsoleDeadLetters(t *testing.T) {
	s := stores[0].open(t)
	r := newRig(t, s)
	job, _ := runtime.NewJobID()
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Enqueue(store.Message{ID: [16]byte{9}, Stream: engine.WorkStream, Job: job[:], Payload: []byte{0xff}})
	})
	if err != nil {
		t.Fatal(err)
	}
	dead := awaitDeadLetters(t, r, 1)
	b := r.browser()
	b.Get("/login?token=" + r.token)
	code, page := b.Get("/deadletters")
	if code != http.StatusOK || !strings.Contains(page, "/deadletters/"+dead.ID.String()+"/confirm?action=requeue") {
		t.Fatalf("dead letters page (%d) lacks %s:\n%s", code, dead.ID, page)
	}
	confirm := "/deadletters/" + dead.ID.String() + "/confirm?action="
	code, loc := b.PostFrom(confirm+"requeue", "/deadletters/"+dead.ID.String()+"/requeue", url.Values{})
	if code != http.StatusSeeOther || !strings.Contains(loc, "Requeued") {
		t.Fatalf("requeue: %d %s", code, loc)
	}
	if !strings.Contains(r.audit.String(), "action=requeue") {
		t.Errorf("the requeue is not in the audit log:\n%s", r.audit.String())
	}
	again := awaitDeadLetters(t, r, 1) // it still does not decode
	if again.ID == dead.ID {
		t.Fatalf("the requeued message is the same dead letter %s", again.ID)
	}
	code, page = b.PostFrom(confirm+"fail", "/deadletters/"+again.ID.String()+"/fail", url.Values{"note": {"give up"}})
	if code != http.StatusUnprocessableEntity {
		t.Errorf("failing an undecodable dead letter: %d, want 422\n%s", code, page)
	}
}

// awaitDeadLetters waits until the store holds n dead letters and
// returns the newest.
func awaitDeadLetters(t *testing.T, r *rig, n int) runtime.DeadLetter {
	t.Helper()
	for range 500 {
		dead, err := r.engine.DeadLetters(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(dead) == n {
			return dead[n-1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not %d dead letters after 5 s", n)
	return runtime.DeadLetter{}
}
