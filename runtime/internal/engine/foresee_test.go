package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/internal/protocol"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// errRollback ends a test's transaction without committing it.
var errRollback = errors.New("rolled back")

// TestForeseenEndIsTheEndStep3Builds: the end a closing step's worker
// foresees before its commit is, byte for byte, the end step 3 builds in
// the commit from what it reads there (status, finished event, expiry),
// and step 3 takes it only while the outcome it reads is the one
// foreseen: another terminal activation, a failure or a kill in between
// sends it back to building the end itself.
func TestForeseenEndIsTheEndStep3Builds(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	e := New(s, Options{Now: func() time.Time { return at }})
	if err := e.Register(&Flow{Name: "one", Nodes: []*Node{{Alias: "n", Task: echo{}}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "one", json.RawMessage(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.flows.flow("one")
	if err != nil {
		t.Fatal(err)
	}
	act := runtype.EntryOf("n").String()
	en := &entry{t: task{Kind: protocol.Entry, Flow: c.key, Node: "n", Act: act}, job: job, c: c,
		res: &result{Act: act, Output: json.RawMessage(`{"y":2}`), Attempts: 1, Finished: at}}
	running, err := e.Status(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	en.t.Started = running.Started.UnixNano()
	e.worker.foresee(en)
	f := en.foreseen
	if f == nil {
		t.Fatal("a closing step of a job with nothing failed foresaw no end")
	}
	if f.end.st.State != runtype.StateSucceeded || string(f.end.st.Result["n"]) != `{"y":2}` {
		t.Fatalf("foreseen status %+v", f.end.st)
	}

	// closing writes what n's steps commit writes before step 3, and
	// change what else the test asks for; it returns the outcome and
	// ending step 3 then reads, and the end it builds from them.
	closing := func(change func(tx store.Tx) error) (fits bool, built jobEnd) {
		t.Helper()
		raw, err := json.Marshal(en.res)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(ctx, func(tx store.Tx) error {
			if err := tx.Put(protocol.ResultKey(job, act), raw); err != nil {
				return err
			}
			if err := tx.Put(protocol.TermKey(job, act), []byte("n")); err != nil {
				return err
			}
			if err := change(tx); err != nil {
				return err
			}
			keys, counters := endingKeys(en)
			values, ns, err := tx.ReadMany(keys, counters)
			if err != nil {
				return err
			}
			end := endingOf(values, ns)
			out, err := readOutcome(tx, job)
			if err != nil {
				return err
			}
			fits = f.fits(out, end)
			raw, err := tx.Get(protocol.MetaKey(job))
			if err != nil {
				return err
			}
			meta, err := decodeClosingMeta(job, raw)
			if err != nil {
				return err
			}
			rs, err := readResults(tx, out.results, map[string]*result{string(protocol.ResultKey(job, act)): en.res})
			if err != nil {
				return err
			}
			built, err = encodeEnd(job, jobStatus(out, meta.Started, at, rs, end.killed), e.writes.retention(c), meta.Parent)
			if err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatal(err)
		}
		return fits, built
	}

	fits, built := closing(func(store.Tx) error { return nil })
	if !fits {
		t.Fatal("step 3 refused the end foreseen for the outcome it read")
	}
	// The two ends differ only in the sequence number of their place in
	// the history (each encoding takes the next).
	if got, want := withoutSeq(t, f.end.raw), withoutSeq(t, built.raw); got != want || !bytes.Equal(built.expiry, f.end.expiry) {
		t.Fatalf("foreseen end differs from step 3's:\n status %s\n    vs %s\n expiry %q vs %q", got, want, f.end.expiry, built.expiry)
	}
	if f.end.expiry == nil {
		t.Fatal("foreseen end has no expiry entry under the default retention")
	}

	other := runtype.EntryOf("m").String()
	for name, change := range map[string]func(tx store.Tx) error{
		"another terminal activation": func(tx store.Tx) error {
			if err := tx.Put(protocol.ResultKey(job, other), []byte(`{"act":"`+other+`","output":{"z":3}}`)); err != nil {
				return err
			}
			return tx.Put(protocol.TermKey(job, other), []byte("m"))
		},
		"a failure": func(tx store.Tx) error { return tx.Put(protocol.FailKey(job, other), []byte("m failed")) },
		"a kill":    func(tx store.Tx) error { return tx.Put(protocol.TombKey(job), []byte("killed")) },
	} {
		if fits, built := closing(change); fits {
			t.Errorf("%s after the foresight: step 3 took the foreseen end (%s), which is not what it builds: %s", name, f.end.raw, built.raw)
		}
	}
}

// TestTasksCarryTheirJobsStart: the entry tasks of a job and the tasks
// its steps publish carry the job's start, which is what lets the step
// that closes it foresee its end.
func TestTasksCarryTheirJobsStart(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	e := New(s, Options{})
	flow := &Flow{
		Name: "fan",
		Nodes: []*Node{
			{Alias: "each", ForEach: &runtype.ForEach{Items: "items", Do: "work"}},
			{Alias: "work", Task: echo{}},
			{Alias: "after", Task: echo{}},
		},
		Edges: []runtype.Edge{{From: "each", FromPort: "out", To: "after"}},
	}
	if err := e.Register(flow); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job, err := e.Start(ctx, "fan", json.RawMessage(`{"items":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	running, err := e.Status(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	want := running.Started.UnixNano()
	// tasks returns the nodes of the tasks waiting on the work stream,
	// failing the test on one that does not carry the job's start.
	tasks := func() []string {
		t.Helper()
		var nodes []string
		err := s.View(ctx, func(tx store.ReadTx) error {
			ms, err := tx.Pending(runtype.WorkStream)
			for _, m := range ms {
				en, err := decodeEntry(m)
				if err != nil {
					return err
				}
				if en.t.Started != want {
					t.Errorf("task of %s carries start %d, want the job's %d", en.t.Act, en.t.Started, want)
				}
				nodes = append(nodes, en.t.Node)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return nodes
	}
	if got := tasks(); len(got) != 1 || got[0] != "each" {
		t.Fatalf("after the start the stream holds %v, want the entry", got)
	}
	if _, err := e.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tasks(); len(got) != 3 || got[0] != "work" {
		t.Fatalf("after the fan-out the stream holds %v, want its 3 bodies", got)
	}
	stepUntilIdle(t, e, 1)
	if st, err := e.Status(ctx, job); err != nil || st.State != runtype.StateSucceeded || !st.Started.Equal(running.Started) {
		t.Fatalf("job %+v (%v), want succeeded, started at %s", st, err, running.Started)
	}
}

// withoutSeq is the end record raw encoded, with the sequence number of
// its place in the history left out.
func withoutSeq(t *testing.T, raw []byte) string {
	t.Helper()
	var end endRecord
	if err := json.Unmarshal(raw, &end); err != nil {
		t.Fatal(err)
	}
	at, _, ok := strings.Cut(end.Recorded, ".")
	if !ok {
		t.Fatalf("end record %s has no place in the history", raw)
	}
	end.Recorded = at
	out, err := json.Marshal(end)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
