package certify

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/flowgen-dev/flowgen/internal/leak"
)

// keyHexChars and keyBase64Chars are how much of an activation's key a
// provider's dedupe value must carry, so that distinct keys never share
// one by chance: 32 hex characters (128 bits), or 20 base64 characters
// of the key's bytes (15 whole bytes, 120 bits).
const (
	keyHexChars    = 32
	keyBase64Chars = 20
	// keyBase32Chars is 24 base32 characters: 15 whole bytes, 120 bits.
	keyBase32Chars = 24
	// keyHexChanged is how many of the 32 hex characters may differ from
	// the key's: a UUID made of the key's first 16 bytes sets its
	// version and variant (6 bits), and keeps 120 of the key's.
	keyHexChanged = 2
)

// carriesKey reports whether value, what the provider deduplicates one
// of the delivery's writes on (by the contract's endpoint rule, -1 for
// the default contract), is bound to the activation: it carries at least
// keyBits of the key (hex in any case, the key's bytes in base64, the
// whole key encoded or digested as internal/leak knows), every key
// field's value as it is (an order id used as the Idempotency-Key, as
// providers' own documentation suggests), or the name-based UUID the
// endpoint declares it derives from the key. A value that carries none
// (a few characters of the key, a hash cut short, a constant, the
// customer when the key is the order) lets two keys share one provider
// effect.
func (c *run) carriesKey(key string, input []byte, value string, rule int) bool {
	if key == "" {
		return true // no key fields: nothing to bind to
	}
	if leak.NewValue(key).WithParts(keyHexChars).Find(value) != "" || carriesKeyHex(key, value, 0) {
		return true
	}
	if raw, err := hex.DecodeString(key); err == nil {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			text := enc.EncodeToString(raw)
			for i := 0; i+keyBase64Chars <= len(text); i += 4 {
				if strings.Contains(value, text[i:i+keyBase64Chars]) {
					return true
				}
			}
		}
		// Base32 (RFC 4648, its hex alphabet, Crockford's is the hex one
		// with other letters left out) in any case: 8 characters per 5
		// bytes, so a part aligned on them.
		upper := strings.ToUpper(value)
		for _, enc := range []*base32.Encoding{base32.StdEncoding, base32.HexEncoding} {
			text := enc.EncodeToString(raw)
			for i := 0; i+keyBase32Chars <= len(text); i += 8 {
				if strings.Contains(upper, text[i:i+keyBase32Chars]) {
					return true
				}
			}
		}
	}
	if derived := c.declaredUUID(key, input, rule); derived != "" && carriesKeyHex(derived, value, keyHexChars) {
		return true
	}
	return c.carriesKeyFields(input, value)
}

// declaredUUID is the name-based UUID (32 hex digits) that the contract's
// endpoint rule declares the connector derives from key or from the
// key's one field of input; "" when the endpoint declares none.
func (c *run) declaredUUID(key string, input []byte, rule int) string {
	if c.spec.Idempotency == nil || rule < 0 || rule >= len(c.spec.Idempotency.ProviderDedupe) {
		return ""
	}
	d := c.spec.Idempotency.ProviderDedupe[rule].UUID
	if d == nil {
		return ""
	}
	ns, err := uuid.Parse(d.Namespace)
	if err != nil {
		return "" // refused by the spec check
	}
	name := key
	if d.Name != "" && d.Name != "key" {
		doc, err := decodeJSON(input)
		obj, _ := doc.(map[string]any)
		text, ok := "", false
		if err == nil && obj != nil {
			text, ok = keyFieldText(obj, d.Name)
		}
		if !ok {
			return ""
		}
		name = text
	}
	u := uuid.NewSHA1(ns, []byte(name))
	if d.Version == 3 {
		u = uuid.NewMD5(ns, []byte(name))
	}
	return hex.EncodeToString(u[:])
}

// carriesKeyFields reports whether value holds every key field of input
// as it is (strings) or as its JSON text (numbers, booleans).
func (c *run) carriesKeyFields(input []byte, value string) bool {
	if c.spec.Idempotency == nil || len(c.spec.Idempotency.Key) == 0 {
		return false
	}
	doc, err := decodeJSON(input)
	obj, ok := doc.(map[string]any)
	if err != nil || !ok {
		return false
	}
	for _, f := range c.spec.Idempotency.Key {
		text, ok := keyFieldText(obj, f)
		if !ok || !strings.Contains(value, text) {
			return false
		}
	}
	return true
}

// keyFieldText is the text of key field f of obj: a string as it is, a
// number or boolean as its JSON text; false when f is absent, empty,
// null, an object or an array.
func keyFieldText(obj map[string]any, f string) (string, bool) {
	v, ok := lookup(obj, f)
	if !ok {
		return "", false
	}
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case nil, map[string]any, []any:
		return "", false
	default:
		text = fmt.Sprint(v)
	}
	return text, text != ""
}

// carriesKeyHex reports whether value's hex digits, read in order
// whatever separates them (a UUID's dashes, a prefix's colon), hold
// keyHexChars consecutive hex characters of key with at most
// keyHexChanged of them changed; with exact > 0, exactly the first exact
// characters of key, none changed.
func carriesKeyHex(key, value string, exact int) bool {
	key = strings.ToLower(key)
	width, allowed := keyHexChars, keyHexChanged
	if exact > 0 {
		if len(key) < exact {
			return false
		}
		key, width, allowed = key[:exact], exact, 0
	}
	digits := make([]byte, 0, len(value))
	for _, c := range []byte(strings.ToLower(value)) {
		if '0' <= c && c <= '9' || 'a' <= c && c <= 'f' {
			digits = append(digits, c)
		}
	}
	if len(digits) > 4096 {
		digits = digits[:4096] // a dedupe value is short; bound the work
	}
	for i := 0; i+width <= len(digits); i++ {
		for j := 0; j+width <= len(key); j++ {
			changed := 0
			for n := 0; n < width && changed <= allowed; n++ {
				if digits[i+n] != key[j+n] {
					changed++
				}
			}
			if changed <= allowed {
				return true
			}
		}
	}
	return false
}
