// Package retryafter reads HTTP's Retry-After header (RFC 9110, section
// 10.2.3), for the clients that honour it: the engine's HTTP capability
// and the registry client.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse returns how long Retry-After value v asks to wait at now: its
// delay in seconds, or the time until its HTTP date. It is zero when v is
// empty, says neither, or names a time already past.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
