package runtime

import (
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// This file decodes the JSON that generated types read without
// encoding/json's reflection, which costs a confined connector (compiled
// to WebAssembly, every loop checked for its deadline) tens of
// microseconds per value. Every fast path gives exactly what
// encoding/json gives, and anything it does not recognise, or any error,
// goes to encoding/json, so that results and error messages are
// encoding/json's.

// maxDepth is encoding/json's nesting limit; deeper input goes to it for
// its error.
const maxDepth = 10000

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue returns the end of the JSON value at data[i:], and whether
// there is a valid one.
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '{' || c == '[':
		return walkComposite(data, i, depth, nil)
	case c == '"':
		return skipString(data, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	}
	return i, false
}

// skipString skips a string: no control characters, only JSON's escapes.
func skipString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipNumber skips -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		start := i + 1
		if i = skipDigits(data, start); i == start {
			return i, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(data, start); i == start {
			return i, false
		}
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

func skipLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// member is one property of a JSON object; name aliases the input
// unless it had escapes.
type member struct {
	name []byte
	raw  json.RawMessage
}

// splitMembers splits data, a JSON object with no whitespace around it,
// into its members, in order; false when data is not a valid object.
func splitMembers(data []byte) ([]member, bool) {
	members := make([]member, 0, 8)
	ok := split(data, '{', &members)
	return members, ok
}

// splitObject is splitMembers as encoding/json's
// map[string]json.RawMessage would hold them (a repeated name keeps its
// last value).
func splitObject(data []byte) (map[string]json.RawMessage, bool) {
	members, ok := splitMembers(data)
	if !ok {
		return nil, false
	}
	props := make(map[string]json.RawMessage, len(members))
	for _, m := range members {
		props[string(m.name)] = m.raw
	}
	return props, true
}

// splitArray splits data, a JSON array with no whitespace around it, into
// its elements; false when data is not a valid array.
func splitArray(data []byte) ([]json.RawMessage, bool) {
	var members []member
	if !split(data, '[', &members) {
		return nil, false
	}
	elems := make([]json.RawMessage, len(members))
	for i, m := range members {
		elems[i] = m.raw
	}
	return elems, true
}

// split checks that data is exactly one object or array (opener says
// which) and appends its members to members.
func split(data []byte, opener byte, members *[]member) bool {
	if len(data) == 0 || data[0] != opener {
		return false
	}
	end, ok := walkComposite(data, 0, 0, members)
	return ok && end == len(data)
}

// walkComposite checks the object or array at data[i:], nested depth
// deep, appends its members (without a name in an array) to members
// when it is not nil, and returns the end of the value.
func walkComposite(data []byte, i, depth int, members *[]member) (int, bool) {
	if depth++; depth > maxDepth {
		return i, false
	}
	closer := byte(']')
	if data[i] == '{' {
		closer = '}'
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == closer {
		return i + 1, true
	}
	for {
		var name []byte
		if closer == '}' {
			if i >= len(data) || data[i] != '"' {
				return i, false
			}
			end, ok := skipString(data, i)
			if !ok {
				return i, false
			}
			if members != nil {
				var plain bool
				if name, plain = plainBytes(data[i:end]); !plain {
					var unquoted string
					if json.Unmarshal(data[i:end], &unquoted) != nil {
						return i, false
					}
					name = []byte(unquoted)
				}
			}
			if i = skipSpace(data, end); i >= len(data) || data[i] != ':' {
				return i, false
			}
			i = skipSpace(data, i+1)
		}
		end, ok := skipValue(data, i, depth)
		if !ok {
			return i, false
		}
		if members != nil {
			*members = append(*members, member{name, json.RawMessage(data[i:end:end])})
		}
		if i = skipSpace(data, end); i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case closer:
			return i + 1, true
		default:
			return i, false
		}
	}
}

// plainBytes is the body of the valid JSON string s when it has no
// escapes and is valid UTF-8 (encoding/json would change nothing).
func plainBytes(s []byte) ([]byte, bool) {
	body := s[1 : len(s)-1]
	ascii := true
	for _, c := range body {
		if c == '\\' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}

// unmarshal is json.Unmarshal(data, dst), faster for what generated
// types hold.
func unmarshal(data []byte, dst any) error {
	start := skipSpace(data, 0)
	end, ok := skipValue(data, start, 0)
	if !ok || skipSpace(data, end) != len(data) {
		return json.Unmarshal(data, dst)
	}
	return decodeValue(data[start:end], dst)
}

// decodeValue decodes raw, one valid JSON value with no whitespace
// around it, into dst as json.Unmarshal would.
func decodeValue(raw []byte, dst any) error {
	switch d := dst.(type) {
	case *json.RawMessage:
		*d = append((*d)[:0], raw...)
		return nil
	case json.Unmarshaler:
		return d.UnmarshalJSON(raw)
	case *string:
		if len(raw) > 0 && raw[0] == '"' {
			if s, ok := plainBytes(raw); ok {
				*d = string(s)
				return nil
			}
		}
	case *int64:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			*d = n
			return nil
		}
	case *float64:
		if len(raw) > 0 && raw[0] != 'n' && raw[0] != 't' && raw[0] != 'f' && raw[0] != '"' && raw[0] != '[' && raw[0] != '{' {
			if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
				*d = f
				return nil
			}
		}
	case *bool:
		switch string(raw) {
		case "true":
			*d = true
			return nil
		case "false":
			*d = false
			return nil
		}
	}
	if raw[0] == '{' && isEmptyStruct(dst) {
		return nil // what encoding/json does: no field to set
	}
	return json.Unmarshal(raw, dst)
}

// isEmptyStruct reports whether dst points to a struct without fields
// (the Params of a connector that declares none).
func isEmptyStruct(dst any) bool {
	t := reflect.TypeOf(dst)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().NumField() == 0
}
