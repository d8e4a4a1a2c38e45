package strictyaml

import (
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/diag"
	"github.com/flowgen-dev/flowgen/flowtype"
)

type inner struct {
	diag.Source
	Name  string `json:"name" flowgen:"required"`
	Count int    `json:"count,omitempty"`
}

type outer struct {
	diag.Source
	ID      string           `json:"id" flowgen:"required"`
	Effects flowtype.Effects `json:"effects"`
	Items   []inner          `json:"items"`
	Labels  map[string]string
	Extra   Raw                `json:"extra"`
	Timeout *flowtype.Duration `json:"timeout"`
}

// render turns diagnostics into "line:col CODE" lines for exact comparison.
func render(l diag.List) string {
	l.Sort()
	var b strings.Builder
	for _, d := range l {
		b.WriteString(d.Pos.String() + " " + string(d.Code) + " " + d.Message + "\n")
	}
	return b.String()
}

func TestDecodeReportsEveryProblemWithPositions(t *testing.T) {
	src := `id: x
effects: Readonly
items:
  - name: a
    count: "3"
  - cont: 4
  - name: b
    name: c
extra: {a: [1, 2.5, true, null]}
timeout: 5 seconds
`
	var o outer
	_, diags := Unmarshal("f.yaml", []byte(src), &o)
	want := `f.yaml:2:10 FMT006 effects: invalid effects "Readonly": did you mean "ReadOnly"? (want one of Pure, ReadOnly, Effectful)
f.yaml:5:12 FMT003 items[0].count: expected an integer, got string
f.yaml:6:5 FMT002 items[1]: unknown field "cont"
f.yaml:6:5 FMT005 items[1]: missing required field "name"
f.yaml:8:5 FMT004 items[2]: duplicate key "name" (first defined at line 7)
f.yaml:10:10 FMT006 timeout: invalid duration "5 seconds": write it like 500ms, 30s or 24h
`
	if got := render(diags); got != want {
		t.Fatalf("diagnostics:\n%s\nwant:\n%s", got, want)
	}
	if o.ID != "x" || o.Items[2].Name != "b" {
		t.Fatalf("decoded %+v", o)
	}
	if p := o.Extra.PosOf("/a/1"); p.Line != 9 || p.Col != 16 {
		t.Fatalf("position of /a/1 = %v", p)
	}
	if p := o.Items[0].At("count"); p.Line != 5 {
		t.Fatalf("At(count) = %v", p)
	}
}

func TestDecodeJSONAndRequired(t *testing.T) {
	var o outer
	_, diags := Unmarshal("f.json", []byte("{\n  \"items\": [],\n  \"effects\": \"Effectful\"\n}\n"), &o)
	if got, want := render(diags), "f.json:2:3 FMT005 the top level: missing required field \"id\"\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if o.Effects != flowtype.Effectful {
		t.Fatalf("effects = %v", o.Effects)
	}
}

func TestDecodeSyntaxErrorHasLineAndColumn(t *testing.T) {
	var o outer
	_, diags := Unmarshal("f.yaml", []byte("id: x\nitems: [a, b\n"), &o)
	if len(diags) != 1 || diags[0].Code != diag.FMT001 || diags[0].Pos.Line == 0 || diags[0].Pos.Col == 0 {
		t.Fatalf("got %v", render(diags))
	}
}

func TestDecodeAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	var v map[string]Raw
	_, diags := Unmarshal("bomb.yaml", []byte(b.String()), &v)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "expands to more than") {
		t.Fatalf("alias bomb not stopped: %v", diags)
	}
}
