package runtime

import (
	"context"
	"strings"
	"testing"
)

// TestIdempotencyUUID: the key as an RFC 9562 version 8 UUID, made of the
// key's first 16 bytes; empty without a key.
func TestIdempotencyUUID(t *testing.T) {
	key := strings.Repeat("f", 64)
	got := NewContext(context.Background(), key, 1, Capabilities{}).IdempotencyUUID()
	if want := "ffffffff-ffff-8fff-bfff-ffffffffffff"; got != want {
		t.Errorf("IdempotencyUUID of %s = %s, want %s", key, got, want)
	}
	key = "0123456789abcdef0123456789abcdef" + strings.Repeat("0", 32)
	got = NewContext(context.Background(), key, 1, Capabilities{}).IdempotencyUUID()
	if got != "01234567-89ab-8def-8123-456789abcdef" {
		t.Errorf("IdempotencyUUID of %s = %s", key, got)
	}
	if got := NewContext(context.Background(), "", 1, Capabilities{}).IdempotencyUUID(); got != "" {
		t.Errorf("IdempotencyUUID without a key = %q, want empty", got)
	}
}
