package certify

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/runtime"
)

// TestCarriesKey: a provider's dedupe value is bound to the activation
// when it carries the key (whole, encoded, digested, or 32 characters
// of it) or every key field as it is, and not when it carries a few
// characters of the key, a digest cut short, a constant or another field.
func TestCarriesKey(t *testing.T) {
	c := &run{spec: &connectorspec.Spec{Idempotency: &connectorspec.Idempotency{Key: []string{"order", "shop.id"}}}}
	sum := sha256.Sum256([]byte("input"))
	key := hex.EncodeToString(sum[:])
	keySHA := sha256.Sum256([]byte(key))
	input := []byte(`{"order": "o-17", "shop": {"id": 42}, "customer": "c-9"}`)
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{key, true},
		{strings.ToUpper(key), true},
		{"charge-" + key + "-capture", true},
		{key[:32], true},
		{key[10:42], true},
		{base64.RawURLEncoding.EncodeToString(sum[:]), true},
		{base64.StdEncoding.EncodeToString(sum[:16]), true},
		{hex.EncodeToString(keySHA[:]), true},
		{"shop-42-order-o-17", true},
		{runtime.NewContext(context.Background(), key, 1, runtime.Capabilities{}).IdempotencyUUID(), true},
		{uuidOf(sum[:16], 0), true},
		{base32.StdEncoding.EncodeToString(sum[:]), true},
		{strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15])), true},
		{base32.StdEncoding.EncodeToString(sum[:10]), false},
		{uuidOf(sum[:16], 4), true},
		{uuidOf(sum[:16], 8), true},
		{"{" + strings.ToUpper(uuidOf(sum[8:24], 5)) + "}", true},
		{uuidOf(keySHA[:16], 5), false},
		{uuidOf(append(sum[:3:3], make([]byte, 13)...), 4), false},
		{key[:6], false},
		{key[:31], false},
		{hex.EncodeToString(keySHA[:4]), false},
		{"order-o-17", false},
		{"c-9", false},
		{"charge", false},
	} {
		if got := c.carriesKey(key, input, tc.value); got != tc.want {
			t.Errorf("carriesKey(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
	if !c.carriesKey("", input, "anything") {
		t.Error("a connector without key fields has nothing to bind its value to, so any value must pass")
	}
}

// uuidOf formats 16 bytes as a UUID, with version set unless 0 (and then
// the RFC 9562 variant too).
func uuidOf(b []byte, version byte) string {
	u := append([]byte(nil), b...)
	if version != 0 {
		u[6] = u[6]&0x0f | version<<4
		u[8] = u[8]&0x3f | 0x80
	}
	h := hex.EncodeToString(u)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
