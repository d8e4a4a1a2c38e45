package registry

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// Catalogue sessions. Signing in keeps the reader's token on the server,
// under a random session id the cookie carries: the cookie is never the
// token itself. Signing out ends the session at once; a revoked or
// expired token ends every session made with it on its next use (each
// page resolves the token again); a session unused for uiSessionIdle
// ends by itself, and any after uiSessionLife.

// uiSessionIdle is how long an unused session lasts and uiSessionLife how
// long any does; maxUISessions bounds how many the server keeps, and
// maxUISessionsPerToken how many one token has (signing in once more
// ends that token's least recently used one, never another token's).
const (
	uiSessionIdle         = 12 * time.Hour
	uiSessionLife         = 7 * 24 * time.Hour
	maxUISessions         = 10000
	maxUISessionsPerToken = 16
)

// uiSession is one signed-in browser.
type uiSession struct {
	secret            string
	started, lastUsed time.Time
}

// live reports whether the session may still be used at now.
func (s *uiSession) live(now time.Time) bool {
	return now.Sub(s.lastUsed) <= uiSessionIdle && now.Sub(s.started) <= uiSessionLife
}

// uiSessions are the signed-in browsers. They live in the server's memory:
// a restart signs everyone out.
type uiSessions struct {
	mu sync.Mutex
	m  map[string]*uiSession
}

// start keeps secret under a new session id and returns the id.
func (u *uiSessions) start(secret string, now time.Time) string {
	var b [32]byte
	rand.Read(b[:])
	id := base64.RawURLEncoding.EncodeToString(b[:])
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*uiSession{}
	}
	u.evict(now, secret)
	u.m[id] = &uiSession{secret: secret, started: now, lastUsed: now}
	return id
}

// evict makes room for a session of secret: it drops expired sessions,
// the token's least recently used one when it has its share, and, when
// the server is full, the least recently used of all; the caller holds
// mu.
func (u *uiSessions) evict(now time.Time, secret string) {
	var oldest, oldestMine string
	mine := 0
	for id, s := range u.m {
		if !s.live(now) {
			delete(u.m, id)
			continue
		}
		if s.secret == secret {
			mine++
			if oldestMine == "" || s.lastUsed.Before(u.m[oldestMine].lastUsed) {
				oldestMine = id
			}
		}
		if oldest == "" || s.lastUsed.Before(u.m[oldest].lastUsed) {
			oldest = id
		}
	}
	switch {
	case mine >= maxUISessionsPerToken:
		delete(u.m, oldestMine)
	case len(u.m) >= maxUISessions:
		delete(u.m, oldest)
	}
}

// secret returns the token of a live session and marks it used.
func (u *uiSessions) secret(id string, now time.Time) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s, ok := u.m[id]
	if !ok {
		return "", false
	}
	if !s.live(now) {
		delete(u.m, id)
		return "", false
	}
	s.lastUsed = now
	return s.secret, true
}

// end ends a session (signing out, or a token that no longer resolves).
func (u *uiSessions) end(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, id)
}
