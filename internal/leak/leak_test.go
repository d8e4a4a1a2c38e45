package leak

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	const secret = "sk_live_Q7d0Yx2P+9/zz"
	v := NewValue(secret)
	sum := sha256.Sum256([]byte(secret))
	for text, want := range map[string]string{
		"Bearer " + secret: "as it is",
		strings.ToUpper(secret): "as it is",
		"key=" + url.QueryEscape(secret): "URL-encoded",
		"x-" + hex.EncodeToString([]byte(secret)): "hex-encoded",
		"hash " + hex.EncodeToString(sum[:]): "as its SHA-256",
		"nothing here": "",
		"sk_live_": "",
	} {
		if got := v.Find(text); got != want {
			t.Errorf("Find(%q) = %q, want %q", text, got, want)
		}
	}
	// Inside base64 at every alignment: Basic auth with users of every
	// length, and the URL alphabet.
	for i := range 6 {
		user := strings.Repeat("u", i)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			text := "Authorization: Basic " + enc.EncodeToString([]byte(user+":"+secret+fmt.Sprint(i)))
			if got := v.Find(text); got != "base64-encoded" {
				t.Errorf("user of %d bytes, %v: Find = %q", i, enc, got)
			}
		}
	}
	if got := NewValue("short").Find("short"); got != "" {
		t.Errorf("a value under MinLength was looked for: %q", got)
	}
}
