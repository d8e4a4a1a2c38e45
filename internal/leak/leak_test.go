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
		"Bearer " + secret:                        "as it is",
		strings.ToUpper(secret):                   "as it is",
		"key=" + url.QueryEscape(secret):          "URL-encoded",
		"x-" + hex.EncodeToString([]byte(secret)): "hex-encoded",
		"hash " + hex.EncodeToString(sum[:]):      "as its SHA-256",
		"nothing here":                            "",
		"sk_live_":                                "",
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

func TestParts(t *testing.T) {
	v := NewValue("Q7d0Yx2Pq9zzK3mW").WithParts(12)
	if got := v.Find("prefix Q7d0Yx2Pq9zz was logged"); got != "in part" {
		t.Errorf("a 14-character part: %q", got)
	}
	if got := v.Find("Q7d0Yx2Pq9z"); got != "" {
		t.Errorf("11 characters are not a part: %q", got)
	}
}

// TestStream: a value cut across writes, or after a flood that no buffer
// would keep, is found.
func TestStream(t *testing.T) {
	const secret = "sk_live_Q7d0Yx2P+9/zz"
	s := NewStream(NewValue(secret), NewValue("never-written-value"))
	flood := strings.Repeat("x", 3<<20)
	s.Write([]byte(flood))
	text := "log: Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+secret)) + "\n"
	for i := range len(text) {
		s.Write([]byte(text[i : i+1]))
	}
	if got := s.Found(); got[0] != "base64-encoded" || got[1] != "" {
		t.Errorf("Found = %q", got)
	}
}
