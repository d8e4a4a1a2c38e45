package retryafter

import (
	"net/http"
	"testing"
	"time"
)

// TestParse: seconds, an HTTP date in the future, and nothing for the
// rest (empty, negative, past, malformed).
func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"5", 5 * time.Second},
		{" 30 ", 30 * time.Second},
		{"0", 0},
		{"-1", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"soon", 0},
	} {
		if got := Parse(tc.v, now); got != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
