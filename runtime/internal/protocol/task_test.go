package protocol

import (
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// TestTaskKeepsItsWireForm: every kind of task travels in format 1's wire
// form (a forEach body as a step with its forEach set), and comes back
// the same task.
func TestTaskKeepsItsWireForm(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		task Task
		wire wireTask
	}{
		{Task{Kind: Entry, Flow: "f#1", Node: "a", Act: "a@", Input: []byte(`{}`), Started: 7},
			wireTask{Kind: runtype.Entry, Flow: "f#1", Node: "a", Act: "a@", Input: []byte(`{}`), Started: 7}},
		{Task{Kind: Step, Flow: "f", Node: "b", Act: "b@<a", Via: "a.out", Deadline: 9},
			wireTask{Kind: runtype.Step, Flow: "f", Node: "b", Act: "b@<a", Via: "a.out", Deadline: 9}},
		{Task{Kind: Body, Flow: "f", Node: "d", Act: "d@/1<e", Element: &Element{ForEach: "e@", Index: 1, Expect: 3, Window: 2, Grouped: true}},
			wireTask{Kind: runtype.Step, Flow: "f", Node: "d", Act: "d@/1<e", Join: "e@", Index: 1, Expect: 3, Window: 2, Grouped: true}},
		{Task{Kind: Join, Flow: "f", Node: "e", Act: "e#join@", Aggregate: &Aggregate{ForEach: "e@", Expect: 3}},
			wireTask{Kind: runtype.Join, Flow: "f", Node: "e", Act: "e#join@", JoinOf: "e@", Expect: 3}},
		{Task{Kind: Undo, Flow: "f", Node: "a", Act: "a@#undo", Resume: "retry#2", Compensation: &Compensation{Step: 1, Of: 2, Round: 2}},
			wireTask{Kind: runtype.Undo, Flow: "f", Node: "a", Act: "a@#undo", Resume: "retry#2", Undo: 1, UndoOf: 2, Round: 2}},
	} {
		raw, err := cbor.Marshal(c.task)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cbor.Marshal(c.wire)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != string(want) {
			t.Errorf("%s: wire %x, want %x", c.task.Kind, raw, want)
		}
		var back Task
		if err := cbor.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, c.task) {
			t.Errorf("%s: back as %+v, want %+v", c.task.Kind, back, c.task)
		}
	}
}

// TestTaskWithoutAKindTakesItsActivations: a task published before tasks
// carried their kind takes its activation id's, a forEach body its own;
// one whose id does not parse, or whose kind is unknown, is refused.
func TestTaskWithoutAKindTakesItsActivations(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		wire wireTask
		want Kind
	}{
		{wireTask{Act: "a@"}, Entry},
		{wireTask{Act: "b@<a"}, Step},
		{wireTask{Act: "d@/1<e", Join: "e@", Index: 1, Expect: 3}, Body},
		{wireTask{Act: "e#join@", JoinOf: "e@"}, Join},
		{wireTask{Act: "a@#undo", Undo: 1, UndoOf: 1}, Undo},
		{wireTask{Act: "garbage"}, 0},
		{wireTask{Kind: 9, Act: "a@"}, 0},
	} {
		raw, err := cbor.Marshal(c.wire)
		if err != nil {
			t.Fatal(err)
		}
		var got Task
		err = cbor.Unmarshal(raw, &got)
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("%q: decoded as %s, want refused", c.wire.Act, got.Kind)
		case c.want != 0 && (err != nil || got.Kind != c.want):
			t.Errorf("%q: %s (%v), want %s", c.wire.Act, got.Kind, err, c.want)
		}
		if h, err := ReadHeader(raw); err != nil || h.Act != c.wire.Act {
			t.Errorf("%q: header %+v (%v)", c.wire.Act, h, err)
		}
	}
}
