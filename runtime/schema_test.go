package runtime

import (
	"regexp"
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{PathJoin("", "a"), "a"},
		{PathJoin("a", "b"), "a.b"},
		{PathIndex(PathJoin("a", "lines"), 2), "a.lines[2]"},
		{PathKey("labels", `we"ird`), `labels["we\"ird"]`},
		{joinPaths("a", "[1].b"), "a[1].b"},
		{joinPaths("", "b"), "b"},
		{joinPaths("a", ""), "a"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestObjectDecoding(t *testing.T) {
	o := DecodeObject([]byte(` {"a": 1, "b": "x", "z": null, "y": true}`))
	o.Required("a", "b")
	o.Closed("a", "b")
	if err := o.Err(); err == nil || err.Error() != "y: property is not allowed by the schema\nz: property is not allowed by the schema" {
		t.Errorf("closed: %v", err)
	}

	o = DecodeObject([]byte(`{"a": 1, "n": null}`))
	o.Required("a", "b", "c")
	if err := o.Err(); err == nil || err.Error() != "b: required property is missing\nc: required property is missing" {
		t.Errorf("required: %v", err)
	}

	o = DecodeObject([]byte(`{"a": 1, "n": null, "s": "x"}`))
	var a int64
	n := Ptr("default")
	var missing *string
	DecodeField(o, "a", &a)
	DecodeOptional(o, "n", &n)
	DecodeOptional(o, "missing", &missing)
	if o.Err() != nil || a != 1 || *n != "default" || missing != nil {
		t.Errorf("a=%d n=%v missing=%v err=%v", a, n, missing, o.Err())
	}
	var s int64
	DecodeField(o, "s", &s)
	if err := o.Err(); err == nil || err.Error() != "s: expected integer, got string" {
		t.Errorf("type error: %v", err)
	}

	for _, bad := range []string{`[1]`, `"x"`, ``, `null`, `3`} {
		if err := DecodeObject([]byte(bad)).Err(); err == nil || !strings.HasPrefix(err.Error(), "expected object, got ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestElementsAndEntriesNameTheirPosition(t *testing.T) {
	o := DecodeObject([]byte(`{"list": [1, 2, "x"], "m": {"b": 1, "a": "x"}}`))
	var list []int64
	DecodeElements(o, "list", &list)
	if err := o.Err(); err == nil || err.Error() != "list[2]: expected integer, got string" {
		t.Errorf("elements: %v", err)
	}
	o = DecodeObject([]byte(`{"m": {"b": 1, "a": "x"}}`))
	var m map[string]int64
	DecodeEntries(o, "m", &m)
	if err := o.Err(); err == nil || err.Error() != `m["a"]: expected integer, got string` {
		t.Errorf("entries: %v", err)
	}
	o = DecodeObject([]byte(`{"m": {"b": 1}, "list": [3]}`))
	DecodeEntries(o, "m", &m)
	DecodeElements(o, "list", &list)
	if o.Err() != nil || m["b"] != 1 || len(list) != 1 || list[0] != 3 {
		t.Errorf("decoded %v %v: %v", m, list, o.Err())
	}
}

func TestDiscriminator(t *testing.T) {
	if tag, err := Discriminator([]byte(`{"kind": "card"}`), "kind"); err != nil || tag != "card" {
		t.Errorf("%q %v", tag, err)
	}
	if _, err := Discriminator([]byte(`{}`), "kind"); err == nil || err.Error() != "kind: required property is missing" {
		t.Errorf("missing: %v", err)
	}
	if _, err := Discriminator([]byte(`{"kind": 3}`), "kind"); err == nil || err.Error() != "kind: expected string, got number" {
		t.Errorf("wrong type: %v", err)
	}
}

func TestValidatorCollectsEveryViolation(t *testing.T) {
	var v Validator
	v.Length("name", "héllo", 6, -1)
	v.Length("name", "héllo", -1, 5) // five code points: fine
	v.Pattern("sku", "abc", regexp.MustCompile(`^[A-Z]+$`))
	v.Items("tags", 0, 1, 3)
	Min(&v, "n", int64(3), 3, true)
	Max(&v, "f", 2.5, 2.5, false)
	Max(&v, "f", 2.6, 2.5, false)
	OneOf(&v, "mode", "x", "a", "b")
	want := strings.Join([]string{
		"name: length 5 is less than minLength 6",
		`sku: "abc" does not match pattern ^[A-Z]+$`,
		"tags: 0 items is fewer than minItems 1",
		"n: 3 is less than exclusiveMinimum 3",
		"f: 2.6 is more than maximum 2.5",
		`mode: "x" is not one of "a", "b"`,
	}, "\n")
	if err := v.Err(); err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	var ok Validator
	if ok.Err() != nil {
		t.Error("empty validator reports an error")
	}
}

func TestRedact(t *testing.T) {
	classes := map[string]string{"in": "internal", "in.email": "pii.email", "in.lines[].sku": "public", "in.tags": "public"}
	classOf := func(p string) string { return classes[p] }
	var v Validator
	v.Pattern("email", "ada@example.com", regexp.MustCompile(`^x$`))
	v.Pattern("lines[3].sku", "abc", regexp.MustCompile(`^x$`))
	OneOf(&v, `tags["k"]`, "zz", "a")
	Min(&v, "unlisted.deep", int64(1), 2, false)
	v.Length("email", "", 1, -1) // no value in the message: untouched
	got := Redact(v.Err(), "in", classOf).Error()
	want := strings.Join([]string{
		"email: [pii.email] does not match pattern ^x$",
		`lines[3].sku: "abc" does not match pattern ^x$`,
		`tags["k"]: "zz" is not one of "a"`,
		"unlisted.deep: [internal] is less than minimum 2",
		"email: length 0 is less than minLength 1",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if Redact(nil, "in", classOf) != nil {
		t.Error("Redact(nil) is not nil")
	}
	if got := Redact(&FieldError{Path: "x", Value: "1", Msg: "bad"}, "", func(string) string { return "" }).Error(); got != "x: [unclassified] bad" {
		t.Errorf("unclassified: %s", got)
	}
}
