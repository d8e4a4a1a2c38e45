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
// ends by itself.

// uiSessionIdle is how long an unused session lasts; maxUISessions bounds
// how many the server keeps (the least recently used go first).
const (
	uiSessionIdle = 12 * time.Hour
	maxUISessions = 10000
)

// uiSession is one signed-in browser.
type uiSession struct {
	secret   string
	lastUsed time.Time
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
	if len(u.m) >= maxUISessions {
		u.evict(now)
	}
	u.m[id] = &uiSession{secret: secret, lastUsed: now}
	return id
}

// evict drops expired sessions, and the least recently used one if none
// has expired; the caller holds mu.
func (u *uiSessions) evict(now time.Time) {
	var oldest string
	for id, s := range u.m {
		if now.Sub(s.lastUsed) > uiSessionIdle {
			delete(u.m, id)
			continue
		}
		if oldest == "" || s.lastUsed.Before(u.m[oldest].lastUsed) {
			oldest = id
		}
	}
	if len(u.m) >= maxUISessions && oldest != "" {
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
	if now.Sub(s.lastUsed) > uiSessionIdle {
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
