package certify

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/uuid"

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
		if got := c.carriesKey(key, input, tc.value, -1); got != tc.want {
			t.Errorf("carriesKey(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
	if !c.carriesKey("", input, "anything", -1) {
		t.Error("a connector without key fields has nothing to bind its value to, so any value must pass")
	}
}

// TestCarriesDeclaredUUID: a name-based UUID is bound to the key when
// the endpoint that deduplicates on it declares the derivation (version
// 5 or 3, of the key or of the key's one field) and the value holds
// exactly that UUID; the same UUID at another endpoint, in another
// namespace, of a cut key or with a digit changed is not.
func TestCarriesDeclaredUUID(t *testing.T) {
	ns := uuid.MustParse("6f1f2a9e-0c3b-4d5e-8f70-1a2b3c4d5e6f")
	c := &run{spec: &connectorspec.Spec{Idempotency: &connectorspec.Idempotency{Key: []string{"order"}, ProviderDedupe: []connectorspec.ProviderDedupe{
		{Method: "POST", Path: "/v1/plain", Header: "Idempotency-Key"},
		{Method: "POST", Path: "/v1/key", Header: "Idempotency-Key", UUID: &connectorspec.DedupeUUID{Namespace: ns.String()}},
		{Method: "POST", Path: "/v1/md5", Header: "Idempotency-Key", UUID: &connectorspec.DedupeUUID{Namespace: ns.String(), Version: 3}},
		{Method: "POST", Path: "/v1/order", BodyField: "request_id", UUID: &connectorspec.DedupeUUID{Namespace: ns.String(), Name: "order"}},
	}}}}
	sum := sha256.Sum256([]byte("input"))
	key := hex.EncodeToString(sum[:])
	input := []byte(`{"order": "o-17", "customer": "c-9"}`)
	v5 := uuid.NewSHA1(ns, []byte(key))
	flipped := v5
	flipped[15] ^= 1
	for _, tc := range []struct {
		value string
		rule  int
		want  bool
	}{
		{v5.String(), 1, true},
		{strings.ToUpper(hex.EncodeToString(v5[:])), 1, true},
		{"charge:" + v5.String(), 1, true},
		{v5.String(), 0, false},  // the endpoint declares no derivation
		{v5.String(), -1, false}, // nor does the default contract
		{v5.String(), 2, false},  // version 3 declared
		{uuid.NewMD5(ns, []byte(key)).String(), 2, true},
		{uuid.NewSHA1(uuid.NameSpaceURL, []byte(key)).String(), 1, false},
		{uuid.NewSHA1(ns, []byte(key[:8])).String(), 1, false},
		{flipped.String(), 1, false},
		{uuid.NewSHA1(ns, []byte("o-17")).String(), 3, true},
		{uuid.NewSHA1(ns, []byte("c-9")).String(), 3, false},
		{uuid.NewSHA1(ns, []byte("o-17")).String(), 1, false},
	} {
		if got := c.carriesKey(key, input, tc.value, tc.rule); got != tc.want {
			t.Errorf("carriesKey(%q, rule %d) = %v, want %v", tc.value, tc.rule, got, tc.want)
		}
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
