package gen_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/examples/connectors/charge"
	"github.com/flowgen-dev/flowgen/examples/connectors/normalize"
	"github.com/flowgen-dev/flowgen/examples/connectors/productlookup"
	"github.com/flowgen-dev/flowgen/examples/connectors/upsertorder"
	"github.com/flowgen-dev/flowgen/gen"
	"github.com/flowgen-dev/flowgen/runtime"
)

// TestDeclareIsTheGeneratedInfo: the declaration computed from a spec at
// run time (what a host running a confined module uses) is the Info()
// generated from it, data classes and redaction included.
func TestDeclareIsTheGeneratedInfo(t *testing.T) {
	for dir, want := range map[string]runtime.NodeInfo{
		"../examples/connectors/charge":        charge.Info(),
		"../examples/connectors/normalize":     normalize.Info(),
		"../examples/connectors/productlookup": productlookup.Info(),
		"../examples/connectors/upsertorder":   upsertorder.Info(),
	} {
		spec, diags := connectorspec.Load(dir + "/connector.yaml")
		if spec == nil {
			t.Fatalf("%s: %v", dir, diags.Err())
		}
		d, err := gen.Declare(spec)
		if err != nil {
			t.Fatal(err)
		}
		// It travels as JSON (to the certification harness).
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back runtime.Declaration
		if err := json.Unmarshal(raw, &back); err != nil || !reflect.DeepEqual(back, d) {
			t.Fatalf("%s: the declaration does not survive JSON: %v\n%+v\n%+v", dir, err, back, d)
		}
		got := back.NodeInfo()
		for _, f := range []struct {
			name       string
			got, wants any
		}{
			{"ID", got.ID, want.ID}, {"Version", got.Version, want.Version}, {"Effects", got.Effects, want.Effects},
			{"Determinism", got.Determinism, want.Determinism}, {"RetryOwner", got.RetryOwner, want.RetryOwner},
			{"Retry", got.Retry, want.Retry}, {"KeySchema", got.KeySchema, want.KeySchema}, {"KeyScope", got.KeyScope, want.KeyScope},
			{"KeyFields", got.KeyFields, want.KeyFields}, {"Capabilities", got.Capabilities, want.Capabilities},
			{"Egress", got.Egress, want.Egress}, {"RateLimit", got.RateLimit, want.RateLimit}, {"Cache", got.Cache, want.Cache},
		} {
			if !reflect.DeepEqual(f.got, f.wants) {
				t.Errorf("%s: %s = %v, generated %v", dir, f.name, f.got, f.wants)
			}
		}
		if len(d.Classes) == 0 {
			t.Errorf("%s: no data classes", dir)
		}
		for path := range d.Classes {
			part, prefix := "", ""
			for _, p := range []struct{ part, prefix string }{{"params", "params"}, {"input", d.InPort}, {"output", d.OutPort}} {
				if rest, ok := strings.CutPrefix(path, p.prefix+"."); ok {
					part, prefix = p.part, rest
				}
			}
			if part == "" {
				continue
			}
			sub := strings.ReplaceAll(prefix, "[]", "[0]")
			if g, w := got.DataClass(part, sub), want.DataClass(part, sub); g != w {
				t.Errorf("%s: class of %s %s = %q, generated %q", dir, part, sub, g, w)
			}
		}
		err = errors.New(`in.card_token: "tok_secret" is not valid`)
		if g, w := got.Redact("input", err), want.Redact("input", err); g.Error() != w.Error() {
			t.Errorf("%s: redaction %q, generated %q", dir, g, w)
		}
	}
}
