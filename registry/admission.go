package registry

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/registry/api"
)

// Upload admission. The registry receives at most MaxConcurrentUploads
// bodies at once; one token at most MaxUploadsPerToken of them and one
// namespace at most MaxUploadsPerNamespace, both below the global cap,
// and the last quarter of the slots only for namespaces with no upload in
// flight, so no tenant, whatever namespaces it may publish to, can hold
// every slot. And a slot is never held for long: an
// upload must keep sending (BodyReadTimeout), average at least
// MinUploadRate once BodyReadTimeout has passed, and end within
// UploadDeadline, however it paces its bytes.

// Defaults of the upload limits (Config).
const (
	DefaultMaxConcurrentUploads = 16
	DefaultUploadDeadline       = 5 * time.Minute
	DefaultMinUploadRate        = 32 << 10 // bytes per second
)

// admission counts the uploads being received, in all, per token and per
// namespace.
type admission struct {
	max, perToken, perNamespace int

	mu          sync.Mutex
	total       int
	byToken     map[string]int
	byNamespace map[string]int
}

func newAdmission(max, perToken, perNamespace int) *admission {
	return &admission{max: max, perToken: perToken, perNamespace: perNamespace,
		byToken: map[string]int{}, byNamespace: map[string]int{}}
}

// admit takes a slot for an upload by token to namespace, or says which
// cap is full: 429 for the tenant's own caps, 503 for the registry's.
func (a *admission) admit(token, namespace string) (release func(), err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.byToken[token] >= a.perToken:
		return nil, api.CodeTooManyUploads.Errorf("token %s has %d uploads in flight, as many as one token may; send the next when one ends", token, a.perToken)
	case a.byNamespace[namespace] >= a.perNamespace:
		return nil, api.CodeTooManyUploads.Errorf("namespace %q has %d uploads in flight, as many as one namespace may; send the next when one ends", namespace, a.perNamespace)
	case a.total >= a.max:
		return nil, api.CodeBusy.Errorf("%d uploads are being received; try again shortly", a.max)
	case a.byNamespace[namespace] > 0 && a.total >= a.max-a.reserve():
		// The last slots are kept for namespaces with nothing in flight:
		// one tenant publishing to several namespaces (or with a token
		// that may) cannot take them all.
		return nil, api.CodeBusy.Errorf("the last %d of %d upload slots are kept for namespaces with no upload in flight; namespace %q has %d", a.reserve(), a.max, namespace, a.byNamespace[namespace])
	}
	a.total++
	a.byToken[token]++
	a.byNamespace[namespace]++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.total--
			if a.byToken[token]--; a.byToken[token] == 0 {
				delete(a.byToken, token)
			}
			if a.byNamespace[namespace]--; a.byNamespace[namespace] == 0 {
				delete(a.byNamespace, namespace)
			}
		})
	}, nil
}

// reserve is how many slots only a namespace with no upload in flight
// may take: a quarter of them.
func (a *admission) reserve() int { return a.max / 4 }

// inFlight is the number of uploads being received.
func (a *admission) inFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// uploadReader reads an upload's body under its limits: no read waits
// longer than idle, the body ends by deadline, and once idle has passed
// it has averaged at least minRate bytes a second.
type uploadReader struct {
	r        io.Reader
	rc       *http.ResponseController
	idle     time.Duration
	minRate  int64
	start    time.Time
	deadline time.Time
	n        int64
}

func newUploadReader(r io.Reader, rc *http.ResponseController, cfg Config) *uploadReader {
	now := time.Now()
	return &uploadReader{r: r, rc: rc, idle: cfg.BodyReadTimeout, minRate: cfg.MinUploadRate, start: now, deadline: now.Add(cfg.UploadDeadline)}
}

func (u *uploadReader) Read(p []byte) (int, error) {
	now := time.Now()
	if elapsed := now.Sub(u.start); elapsed > u.idle && float64(u.n) < float64(u.minRate)*elapsed.Seconds() {
		return 0, api.CodeTimeout.Errorf("the upload sent %d bytes in %s, less than this registry's minimum of %d bytes a second", u.n, elapsed.Round(time.Second), u.minRate)
	}
	limit := now.Add(u.idle)
	if limit.After(u.deadline) {
		limit = u.deadline
	}
	u.rc.SetReadDeadline(limit)
	n, err := u.r.Read(p)
	u.n += int64(n)
	if errors.Is(err, os.ErrDeadlineExceeded) && !limit.Before(u.deadline) {
		return n, api.CodeTimeout.Errorf("the upload did not end within %s, this registry's deadline for one upload", u.deadline.Sub(u.start))
	}
	return n, err
}

// checkUploadLimits fills in the upload limits' defaults and refuses
// per-tenant caps that would let one tenant take every slot.
func checkUploadLimits(cfg *Config) error {
	if cfg.MaxConcurrentUploads <= 0 {
		cfg.MaxConcurrentUploads = DefaultMaxConcurrentUploads
	}
	if cfg.MaxUploadsPerNamespace <= 0 {
		cfg.MaxUploadsPerNamespace = max(1, cfg.MaxConcurrentUploads/2)
	}
	if cfg.MaxUploadsPerToken <= 0 {
		cfg.MaxUploadsPerToken = max(1, cfg.MaxUploadsPerNamespace/2)
	}
	if cfg.UploadDeadline <= 0 {
		cfg.UploadDeadline = DefaultUploadDeadline
	}
	if cfg.MinUploadRate <= 0 {
		cfg.MinUploadRate = DefaultMinUploadRate
	}
	switch {
	case cfg.MaxConcurrentUploads > 1 && cfg.MaxUploadsPerNamespace >= cfg.MaxConcurrentUploads:
		return fmt.Errorf("MaxUploadsPerNamespace (%d) must be below MaxConcurrentUploads (%d), or one namespace can take every slot", cfg.MaxUploadsPerNamespace, cfg.MaxConcurrentUploads)
	case cfg.MaxUploadsPerToken > cfg.MaxUploadsPerNamespace:
		return fmt.Errorf("MaxUploadsPerToken (%d) must not exceed MaxUploadsPerNamespace (%d)", cfg.MaxUploadsPerToken, cfg.MaxUploadsPerNamespace)
	}
	return nil
}
