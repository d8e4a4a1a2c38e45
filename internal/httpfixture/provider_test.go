package httpfixture

import (
	"net/http"
	"testing"
)

// TestRepeatedMergePatchTakesNoEffect: a JSON merge patch applied again
// changes nothing, over a document a PUT left or over what earlier
// patches set; one that sets something else, and a JSON Patch, do.
func TestRepeatedMergePatchTakesNoEffect(t *testing.T) {
	var p Provider
	apply := func(method, body string, header http.Header) bool {
		return p.ApplyRead(method, "https://crm.example/contacts/c-1", header, []byte(body), p.Read(method, "https://crm.example/contacts/c-1", header, []byte(body)))
	}
	merge := http.Header{"Content-Type": {"application/merge-patch+json"}}
	if !apply("PATCH", `{"stage":"customer","owner":{"id":7}}`, merge) {
		t.Error("the first patch took no effect")
	}
	if apply("PATCH", `{"owner":{"id":7},"stage":"customer"}`, merge) {
		t.Error("the same patch again took an effect")
	}
	if apply("PATCH", `{"stage":"customer"}`, merge) {
		t.Error("a patch of what is already set took an effect")
	}
	if !apply("PATCH", `{"stage":"lead"}`, merge) {
		t.Error("a patch that changes a field took no effect")
	}
	apply("PUT", `{"stage":"lead","name":"Ada"}`, nil)
	if apply("PATCH", `{"name":"Ada"}`, merge) {
		t.Error("a patch of what the PUT left took an effect")
	}
	ops := http.Header{"Content-Type": {"application/json-patch+json"}}
	for i := range 2 {
		if !apply("PATCH", `[{"op":"add","path":"/tags/-","value":"x"}]`, ops) {
			t.Errorf("JSON Patch %d took no effect", i+1)
		}
	}
}
