package runtime

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// jsonSeeds are inputs at the edges of what encoding/json accepts.
var jsonSeeds = []string{
	`{"n":1}`, ` {"a" : "x", "b":[1, 2.5e-3, -0, true, false, null], "c":{"d":{}}} `, `{}`, `[]`, `[1,]`, `{"a":1,}`,
	`{"a":1}x`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":1E+9}`, `"plain"`,
	`"esc\"aped\n\u00e9\ud83d\ude00"`, `"bad \x"`, "\"ctl\x01\"", "\"\xff\xfe\"", `"caf\u00e9"`, "\"café\"", `{"\u0061":1,"a":2}`,
	`{"a":1,"a":2}`, `123`, `-9223372036854775808`, `9223372036854775808`, `1e400`, `1.5`, `true`, `tru`, `nul`, `null`,
	`[[[[]]]]`,
	"\u00a0{}", "{}\u00a0", "\t{\n}\r", `"\u12"`, `{"a":[1,{"b":"c"}],"e":"\\"}`, `{"k":"v"`, `[`, ``, ` `,
}

// TestDecodeAsEncodingJSON: the fast decoders give exactly what
// encoding/json gives, values and errors, on the seeds.
func TestDecodeAsEncodingJSON(t *testing.T) {
	deep := []string{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "}", `{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "}"}
	for _, s := range append(jsonSeeds, deep...) {
		if msg := sameAsEncodingJSON([]byte(s)); msg != "" {
			t.Errorf("%.60q: %s", s, msg)
		}
	}
}

// FuzzDecode: the same on any input.
func FuzzDecode(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if msg := sameAsEncodingJSON(data); msg != "" {
			t.Fatal(msg)
		}
	})
}

// sameAsEncodingJSON decodes data into each type the fast paths handle,
// through them and through encoding/json, and describes the first
// difference ("" when there is none).
func sameAsEncodingJSON(data []byte) string {
	for _, target := range []any{new(string), new(int64), new(float64), new(bool), new(json.RawMessage),
		new(map[string]json.RawMessage), new([]json.RawMessage), new(any), new(struct{}), new(emptyParams)} {
		typ := reflect.TypeOf(target).Elem()
		fast, slow := reflect.New(typ), reflect.New(typ)
		errFast := unmarshal(data, fast.Interface())
		errSlow := json.Unmarshal(data, slow.Interface())
		if fmt.Sprint(errFast) != fmt.Sprint(errSlow) {
			return fmt.Sprintf("into %s: error %v, encoding/json says %v", typ, errFast, errSlow)
		}
		if !reflect.DeepEqual(fast.Elem().Interface(), slow.Elem().Interface()) {
			return fmt.Sprintf("into %s: %#v, encoding/json gives %#v", typ, fast.Elem().Interface(), slow.Elem().Interface())
		}
	}
	props, ok := splitObject(data)
	var want map[string]json.RawMessage
	if err := json.Unmarshal(data, &want); (err == nil) != ok && len(data) > 0 && data[0] == '{' && data[len(data)-1] == '}' {
		return fmt.Sprintf("splitObject ok=%v, encoding/json error %v", ok, err)
	} else if ok && !reflect.DeepEqual(props, want) {
		return fmt.Sprintf("splitObject gives %q, encoding/json %q", props, want)
	}
	elems, ok := splitArray(data)
	var wantElems []json.RawMessage
	if err := json.Unmarshal(data, &wantElems); (err == nil) != ok && len(data) > 0 && data[0] == '[' && data[len(data)-1] == ']' {
		return fmt.Sprintf("splitArray ok=%v, encoding/json error %v", ok, err)
	} else if ok && !reflect.DeepEqual(elems, wantElems) {
		return fmt.Sprintf("splitArray gives %q, encoding/json %q", elems, wantElems)
	}
	return ""
}

// emptyParams is the Params of a connector that declares none.
type emptyParams struct{}
