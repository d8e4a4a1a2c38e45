package features

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

const validInput = `{
	"request_id": "req-42",
	"account": {"id": "acc-1", "owner": {"id": "cus-9", "email": "ada@example.com"}},
	"amount": 1250,
	"placed_at": "2026-11-22T10:00:00Z",
	"signature": "aGVsbG8=",
	"priority": "24x7",
	"tags": ["a", "b"],
	"labels": {"team": "payments"},
	"limits": {"daily": {"max": 5}},
	"extra": {"anything": [1, 2]},
	"payment": {"method": "card", "token": "tok_1"},
	"fallbacks": [{"method": "transfer", "iban": "DE89370400440532013000"}]
}`

func decode[T any](t *testing.T, data string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

func TestDecodeValidInput(t *testing.T) {
	in := decode[Input](t, validInput)
	if in.RequestID != "req-42" || in.Account.ID != "acc-1" || *in.Account.Owner.Email != "ada@example.com" || in.Amount != 1250 {
		t.Errorf("scalars: %+v", in)
	}
	if !in.PlacedAt.Equal(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("placed_at = %v", in.PlacedAt)
	}
	if string(in.Signature) != "hello" {
		t.Errorf("signature = %q", in.Signature)
	}
	if *in.Priority != InputPriority24x7 {
		t.Errorf("priority = %v", *in.Priority)
	}
	card, ok := in.Payment.(*CardPayment)
	if !ok || card.Token != "tok_1" {
		t.Errorf("payment = %#v", in.Payment)
	}
	if tr, ok := in.Fallbacks[0].(*Transfer); !ok || tr.Iban != "DE89370400440532013000" {
		t.Errorf("fallbacks = %#v", in.Fallbacks)
	}
	if in.Labels["team"] != "payments" || in.Limits["daily"].Max != 5 || string(in.Extra) != `{"anything": [1, 2]}` {
		t.Errorf("maps/raw: %+v %+v %s", in.Labels, in.Limits, in.Extra)
	}
	if err := in.Validate(); err != nil {
		t.Errorf("valid input fails Validate: %v", err)
	}
}

func TestDecodeErrorsNameThePath(t *testing.T) {
	for _, tc := range []struct {
		name, patch, want string
	}{
		{"missing nested required", `"account": {"owner": {}}`, "account.id: required property is missing"},
		{"wrong type", `"amount": "12"`, "amount: expected integer, got string"},
		{"unknown variant", `"fallbacks": [{"method": "card", "token": "t"}, {"method": "cash"}]`, `fallbacks[1].method: "cash" is not one of "card", "transfer"`},
		{"variant field missing", `"payment": {"method": "transfer"}`, "payment.iban: required property is missing"},
		{"map value", `"limits": {"daily": {"max": "x"}}`, `limits["daily"].max: expected integer, got string`},
		{"not an object", `"account": [1]`, "account: expected object, got array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Input
			err := json.Unmarshal([]byte(patch(t, validInput, tc.patch)), &in)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
		})
	}
}

// patch replaces one top-level property of a JSON object.
func patch(t *testing.T, doc, prop string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte("{"+prop+"}"), &p); err != nil {
		t.Fatal(err)
	}
	for k, v := range p {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParamsDefaultsAndClosedObject(t *testing.T) {
	p := decode[Params](t, `{"endpoint": "https://api.pay.example"}`)
	if *p.Retries != 3 || *p.Mode != ParamsModeSafe || *p.Ratio != 0.5 || *p.Verbose || *p.Region != "eu-1" {
		t.Errorf("defaults not applied: %+v", p)
	}
	p = decode[Params](t, `{"endpoint": "https://api.pay.example", "retries": 0, "mode": "fast"}`)
	if *p.Retries != 0 || *p.Mode != ParamsModeFast {
		t.Errorf("explicit values lost: %+v", p)
	}
	err := json.Unmarshal([]byte(`{"endpoint": "https://x.example", "colour": "red", "bogus": 1}`), &p)
	if err == nil || err.Error() != "bogus: property is not allowed by the schema\ncolour: property is not allowed by the schema" {
		t.Errorf("closed object: %v", err)
	}
}

func TestValidateReportsEveryViolation(t *testing.T) {
	in := decode[Input](t, patch(t, patch(t, patch(t, patch(t, patch(t, validInput,
		`"amount": 0`), `"tags": ["a", "", "c", "d", "e", "f"]`), `"request_id": "REQ-1"`),
		`"limits": {"a": {"max": -1}, "b": {"max": 1}}`),
		`"fallbacks": [{"method": "transfer", "iban": "nope"}]`))
	p := decode[Params](t, `{"endpoint": "short", "ratio": 1, "mode": "fast"}`)
	bad := Params{Endpoint: "https://api.pay.example", Mode: new(ParamsMode("turbo"))}
	got := []string{}
	for _, err := range []error{in.Validate(), p.Validate(), bad.Validate()} {
		got = append(got, strings.Split(err.Error(), "\n")...)
	}
	want := []string{
		"amount: 0 is less than minimum 1",
		`fallbacks[0].iban: "nope" does not match pattern ^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$`,
		`limits["a"].max: -1 is less than minimum 0`,
		`request_id: "REQ-1" does not match pattern ^req-[0-9]+$`,
		"tags: 6 items is more than maxItems 5",
		"tags[1]: length 0 is less than minLength 1",
		"endpoint: length 5 is less than minLength 8",
		"ratio: 1 is more than exclusiveMaximum 1",
		`mode: "turbo" is not one of "fast", "safe"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}

func TestEncodeRoundTripsAndSetsDiscriminators(t *testing.T) {
	in := decode[Input](t, validInput)
	in.Payment = &Transfer{Iban: "DE89370400440532013000"} // Method left empty on purpose
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"payment":{"iban":"DE89370400440532013000","method":"transfer"}`) {
		t.Errorf("variant encoded without its discriminator: %s", b)
	}
	again := decode[Input](t, string(b))
	if _, ok := again.Payment.(*Transfer); !ok || !reflect.DeepEqual(again.Fallbacks, in.Fallbacks) || again.Amount != in.Amount {
		t.Errorf("round trip changed the value:\n%+v\n%+v", in, again)
	}
}

func TestNewNodeDecodesValidatesAndRuns(t *testing.T) {
	node := NewNode(Connector{})
	if info := node.Info(); info.ID != "demo.features" || info.KeySchema != "demo.features@3" || info.Retry.MaxAttempts != 6 ||
		info.Retry.MaxInterval != 30*time.Second || !slices.Equal(info.KeyFields, []string{"request_id", "account.id", "account.owner.id"}) {
		t.Errorf("info = %+v", info)
	}
	ctx := runtime.NewContext(context.Background(), "k", 1, runtime.Capabilities{})
	out, err := node.Run(ctx, json.RawMessage(`{"endpoint": "https://api.pay.example", "ratio": 0.2}`), json.RawMessage(validInput))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"fee":2.5,"request_id":"req-42","status":"accepted"}` {
		t.Errorf("output = %s", out)
	}
	_, err = node.Run(ctx, json.RawMessage(`{"endpoint": "https://api.pay.example"}`), json.RawMessage(`{"request_id": "req-1"}`))
	var rerr *runtime.Error
	if !errors.As(err, &rerr) || rerr.Kind != runtime.SchemaMismatch || !strings.Contains(err.Error(), "account: required property is missing") {
		t.Errorf("bad input: %v", err)
	}
	_, err = node.Run(ctx, nil, json.RawMessage(validInput))
	if runtime.KindOf(err) != runtime.SchemaMismatch || !strings.Contains(err.Error(), "endpoint: required property is missing") {
		t.Errorf("missing params: %v", err)
	}
}

func TestUndeclaredGrantFailsAsPolicyDenied(t *testing.T) {
	c := Context{Context: context.Background(), rt: runtime.NewContext(context.Background(), "", 1, runtime.Capabilities{})}
	if _, err := c.Get("https://api.pay.example/x", nil); runtime.KindOf(err) != runtime.PolicyDenied {
		t.Errorf("ungranted http.read: %v", err)
	}
}

func TestDataClassesAndManifest(t *testing.T) {
	for path, want := range map[string]string{
		"in.account.owner.email": "pii.email",
		"in.payment":             "financial",
		"in.tags[]":              "public",
		"in.limits[].max":        "public",
		"params.endpoint":        "public",
		"audit.actor":            "pii.name",
		"in.nonexistent":         "",
	} {
		if got := DataClass(path); got != want {
			t.Errorf("DataClass(%q) = %q, want %q", path, got, want)
		}
	}
	var m struct {
		ID     string
		Inputs map[string]struct {
			Defs map[string]json.RawMessage `json:"$defs"`
		}
	}
	if err := json.Unmarshal(Manifest(), &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != ID || m.Inputs["in"].Defs["account.schema"] == nil {
		t.Errorf("manifest does not bundle the schema files: %s", Manifest())
	}
}

// TestErrorsKeepNonPublicValuesOut: what reaches job state and logs through
// NewNode names every problem, but shows only public values.
func TestErrorsKeepNonPublicValuesOut(t *testing.T) {
	node := NewNode(Connector{})
	ctx := runtime.NewContext(context.Background(), "", 1, runtime.Capabilities{})
	in := patch(t, patch(t, patch(t, validInput, `"request_id": "REQ-1"`), `"amount": 0`),
		`"fallbacks": [{"method": "transfer", "iban": "DE00SECRET"}]`)
	_, err := node.Run(ctx, json.RawMessage(`{"endpoint": "https://api.pay.example"}`), json.RawMessage(in))
	if err == nil {
		t.Fatal("bad input accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`request_id: "REQ-1" does not match pattern`,                    // public: shown
		"amount: [financial.amount] is less than minimum 1",             // redacted, class named
		"fallbacks[0].iban: [financial.account] does not match pattern", // by the element's class
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "DE00SECRET") {
		t.Errorf("a financial value leaked into the error: %s", msg)
	}
	// Validate itself, for the connector's own code and tests, shows all.
	var direct Input
	json.Unmarshal([]byte(in), &direct)
	if !strings.Contains(direct.Validate().Error(), `"DE00SECRET"`) {
		t.Error("Validate hides values from the connector's own code")
	}
}
