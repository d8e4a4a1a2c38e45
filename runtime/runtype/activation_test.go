package runtype

import (
	"errors"
	"testing"
)

func mustUndo(t testing.TB, a ActivationID) ActivationID {
	t.Helper()
	u, err := UndoOf(a)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestActivationIDText(t *testing.T) {
	step := StepOf("charge", "/3/retry~2", "fetch")
	cases := []struct {
		id   ActivationID
		text string
		kind Kind
	}{
		{EntryOf("fetch"), "fetch@", Entry},
		{StepOf("charge", "", "fetch"), "charge@<fetch", Step},
		{step, "charge@/3/retry~2<fetch", Step},
		{JoinOf("each", "/1"), "each#join@/1", Join},
		{JoinOf("each", ""), "each#join@", Join},
		{mustUndo(t, step), "charge@/3/retry~2<fetch#undo", Undo},
		{mustUndo(t, EntryOf("reserve")), "reserve@#undo", Undo},
	}
	for _, c := range cases {
		if got := c.id.String(); got != c.text {
			t.Errorf("String() = %q, want %q", got, c.text)
		}
		back, err := Parse(c.text)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.text, err)
			continue
		}
		if back.String() != c.text || back.Kind() != c.kind || back.Node() != c.id.Node() || back.Dim() != c.id.Dim() || back.From() != c.id.From() {
			t.Errorf("Parse(%q) = %s %q node %q dim %q from %q", c.text, back.Kind(), back, back.Node(), back.Dim(), back.From())
		}
	}
	u, _ := Parse("charge@/3/retry~2<fetch#undo")
	if done, ok := u.Undone(); !ok || done.String() != step.String() {
		t.Errorf("Undone() = %q, %v", done, ok)
	}
}

func TestParseRejects(t *testing.T) {
	for _, s := range []string{
		"", "fetch", "@", "@<a", "a@b", "a@<", "a@/x<b", "a@/-1<b", "a@/01<b", "a@/n~0<b",
		"a#join@/x", "#join@", "a@/1<b<c", "a#undo#undo", "a#join@#undo", "a/b@", "a@/1/<b",
	} {
		if id, err := Parse(s); !errors.Is(err, ErrBadActivationID) {
			t.Errorf("Parse(%q) = %q, %v; want ErrBadActivationID", s, id, err)
		}
	}
}

func TestDim(t *testing.T) {
	d := Dim("").Element(2).Element(0)
	if d != "/2/0" || d.Parent() != "/2" || d.Index() != 0 || d.Parent().Parent() != "" || Dim("").Index() != -1 {
		t.Fatalf("element addresses wrong: %q", d)
	}
	p1, k1 := d.Reenter("check")
	p2, k2 := p1.Reenter("check")
	inner, k3 := p2.Reenter("retry")
	again, k4 := inner.Reenter("check")
	if p1 != "/2/0/check~1" || k1 != 1 || p2 != "/2/0/check~2" || k2 != 2 || inner != "/2/0/check~2/retry~1" || k3 != 1 || again != "/2/0/check~3" || k4 != 3 {
		t.Fatalf("loop passes: %q %d, %q %d, %q %d, %q %d", p1, k1, p2, k2, inner, k3, again, k4)
	}
	if p1.Index() != -1 {
		t.Errorf("a loop pass has no element index")
	}
}

// FuzzParse checks the grammar has one reading: whatever Parse accepts
// prints back to the same text and parses again to the same id.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a@", "b@<a", "b@/1/a~3<a", "e#join@/0", "b@/1<a#undo", "a@#undo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Parse(s)
		if err != nil {
			return
		}
		if id.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, id)
		}
		again, err := Parse(id.String())
		if err != nil || again.String() != s || again.Kind() != id.Kind() {
			t.Fatalf("reparse of %q: %q, %v", s, again, err)
		}
	})
}
