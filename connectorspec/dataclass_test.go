package connectorspec

import (
	"encoding/json"
	"testing"
)

// TestWalkClasses: leaves get the class written on them, inherited from
// an ancestor, or found behind a $ref into a shared schema file.
func TestWalkClasses(t *testing.T) {
	t.Parallel()
	spec, diags := Load("../examples/connectors/charge/connector.yaml")
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	var in any
	if err := json.Unmarshal([]byte(`{"order_id": "o", "customer": {"id": "c", "email": "e"}, "lines": [{"sku": "s", "qty": 1}], "card_token": "t"}`), &in); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	WalkClasses(spec.InputSchema("in"), in, func(ptr, class string, _ any) { got[ptr] = class })
	want := map[string]string{
		"/order_id": "public", "/customer/id": "pii.customer_id", "/customer/email": "pii.email",
		"/lines/0/sku": "public", "/lines/0/qty": "public", "/card_token": "financial.card",
	}
	for ptr, class := range want {
		if got[ptr] != class {
			t.Errorf("%s: class %q, want %q", ptr, got[ptr], class)
		}
	}
	if len(got) != len(want) {
		t.Errorf("leaves %v", got)
	}
	for class, rank := range map[string]int{"public": 0, "": 0, "internal": 1, "confidential": 2, "pii.email": 3, "financial": 3, "credential.api_key": 4} {
		if ClassRank(class) != rank {
			t.Errorf("rank of %q: %d, want %d", class, ClassRank(class), rank)
		}
	}
}
