package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// fanFailing fans out over items and fails the elements whose n is odd.
func fanFailing(agg Aggregate, quorum int) *Flow {
	work := Typed(NodeInfo{ID: "t.work"}, func(ctx *Context, _ noParams, in item) (item, error) {
		if in.N%2 == 1 {
			return item{}, Errorf(Permanent, "odd %d", in.N)
		}
		return in, nil
	})
	return &Flow{
		Name: "fan",
		Nodes: []*FlowNode{
			{Alias: "each", ForEach: &ForEach{Items: "items", Do: "work", Aggregate: agg, Quorum: quorum}},
			{Alias: "work", Runner: work},
			{Alias: "after", Runner: noop},
		},
		Edges: []Edge{{From: "each", FromPort: "out", To: "after"}},
	}
}

func TestForEachAggregatePolicies(t *testing.T) {
	for _, tc := range []struct {
		agg    Aggregate
		quorum int
		items  string
		want   JobState
	}{
		{AggregateAll, 0, `[{"n":0},{"n":2}]`, StateSucceeded},
		{AggregateAll, 0, `[{"n":0},{"n":1}]`, StateFailed},
		{AggregateAny, 0, `[{"n":1},{"n":2},{"n":3}]`, StateSucceeded},
		{AggregateAny, 0, `[{"n":1},{"n":3}]`, StateFailed},
		{AggregateQuorum, 2, `[{"n":0},{"n":1},{"n":2}]`, StateSucceeded},
		{AggregateQuorum, 3, `[{"n":0},{"n":1},{"n":2}]`, StateFailed},
		{AggregateAll, 0, `[]`, StateSucceeded},
	} {
		t.Run(fmt.Sprintf("%s-%d-%s", tc.agg, tc.quorum, tc.items), func(t *testing.T) {
			r := newRig(t)
			e := New(r.store, Options{})
			if err := e.Register(fanFailing(tc.agg, tc.quorum)); err != nil {
				t.Fatal(err)
			}
			job, err := e.Start(context.Background(), "fan", json.RawMessage(`{"items":`+tc.items+`}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := drain(t, e); err != nil {
				t.Fatal(err)
			}
			st, _ := e.Status(context.Background(), job)
			if st.State != tc.want {
				t.Fatalf("state %s, want %s: %+v", st.State, tc.want, st)
			}
			if tc.want == StateSucceeded && tc.agg == AggregateAny && !strings.Contains(string(st.Result["after"]), "null") {
				t.Fatalf("failed elements are not null in the join output: %s", st.Result["after"])
			}
		})
	}
}
