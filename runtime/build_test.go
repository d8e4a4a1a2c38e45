package runtime

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

type buildOrder struct{ ID string }
type buildReceipt struct{ OK bool }

func TestBuilderAssemblesAndReportsMistakes(t *testing.T) {
	t.Parallel()
	echo := TypedNode[buildOrder, buildOrder]{Typed(NodeInfo{ID: "t.echo", Timeout: time.Minute}, func(_ *Context, _ struct{}, in buildOrder) (buildOrder, error) { return in, nil })}
	sink := TypedNode[buildOrder, buildReceipt]{Typed(NodeInfo{ID: "t.sink"}, func(_ *Context, _ struct{}, _ buildOrder) (buildReceipt, error) {
		return buildReceipt{true}, nil
	})}
	undo := TypedNode[buildReceipt, struct{}]{Typed(NodeInfo{ID: "t.undo"}, func(_ *Context, _ struct{}, _ buildReceipt) (struct{}, error) { return struct{}{}, nil })}

	b := NewBuilder("demo")
	a := AddNode(b, "a", echo, NodeOptions{Timeout: 3 * time.Second, Params: json.RawMessage(`{}`)})
	sw := AddSwitch[buildOrder](b, "route", Switch{On: "ID", Cases: []Case{{Label: "x", Equals: json.RawMessage(`"x"`)}}})
	s := AddNode(b, "s", sink, NodeOptions{})
	Compensate(b, s, undo, []string{"OK"})
	Connect(b, a.Out("out"), sw.In(), EdgeOptions{})
	Connect(b, sw.Out("x"), s.In(), EdgeOptions{Delivery: ExactlyOnce, DedupeTTL: time.Hour})
	f, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes) != 3 || len(f.Edges) != 2 || f.Edges[1] != (Edge{From: "route", FromPort: "x", To: "s", Delivery: ExactlyOnce, DedupeTTL: time.Hour}) {
		t.Errorf("flow = %+v", f)
	}
	if got := f.Nodes[0].Runner.Info().Timeout; got != 3*time.Second {
		t.Errorf("node timeout = %v, want the flow's 3s", got)
	}
	if f.Nodes[2].Compensate == nil || f.Nodes[2].Compensate.UndoKey[0] != "OK" {
		t.Errorf("compensation not attached: %+v", f.Nodes[2])
	}

	b = NewBuilder("bad")
	AddNode(b, "a", echo, NodeOptions{})
	AddNode(b, "a", echo, NodeOptions{})
	Connect(b, Ref[buildOrder, buildOrder]{"ghost"}.Out("out"), a.In(), EdgeOptions{})
	Compensate(b, Ref[buildOrder, buildReceipt]{"nobody"}, undo, nil)
	_, err = b.Build()
	for _, want := range []string{`node "a" added twice`, `no node "ghost"`, `compensation for unknown node "nobody"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Build error %v does not mention %q", err, want)
		}
	}
}
