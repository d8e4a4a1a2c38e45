package registry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

// The scopes a token can carry.
const (
	ScopeAdmin         = "admin"    // everything, including other namespaces
	ScopePull          = "pull"     // read metadata, download certified versions
	ScopeMetrics       = "metrics"  // scrape /metrics
	ScopePublishPrefix = "publish:" // publish:NAMESPACE: publish, deprecate and yank there
)

// TokenPrefix starts every token secret, so that secret scanners can find
// leaked ones.
const TokenPrefix = "fgr_"

// NewToken makes a token with a fresh secret. The secret is returned once;
// only its hash is stored.
func NewToken(name string, scopes []string, expires time.Time, policy string, now time.Time) (meta.Token, string, error) {
	if name == "" {
		return meta.Token{}, "", errors.New("a token needs a name")
	}
	if len(scopes) == 0 {
		return meta.Token{}, "", errors.New("a token needs at least one scope (admin, pull or publish:NAMESPACE)")
	}
	for _, s := range scopes {
		if err := checkScope(s); err != nil {
			return meta.Token{}, "", err
		}
	}
	if policy != "" && !slices.Contains(scopes, ScopePull) {
		return meta.Token{}, "", errors.New("a pull policy binds only to a token with the pull scope")
	}
	raw := make([]byte, 20)
	if _, err := rand.Read(raw); err != nil {
		return meta.Token{}, "", err
	}
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	secret := TokenPrefix + strings.ToLower(enc.EncodeToString(raw))
	id := make([]byte, 6)
	rand.Read(id)
	t := meta.Token{
		ID: "tok_" + hex.EncodeToString(id), Name: name, Hash: HashToken(secret),
		Scopes: slices.Clone(scopes), Created: now.UTC(), Expires: expires.UTC(), Policy: policy,
	}
	if expires.IsZero() {
		t.Expires = time.Time{}
	}
	return t, secret, nil
}

func checkScope(s string) error {
	if s == ScopeAdmin || s == ScopePull || s == ScopeMetrics {
		return nil
	}
	if ns, ok := strings.CutPrefix(s, ScopePublishPrefix); ok {
		if err := checkName("namespace", ns); err != nil {
			return fmt.Errorf("scope %q: %w", s, err)
		}
		return nil
	}
	return fmt.Errorf("unknown scope %q: want admin, pull, metrics or publish:NAMESPACE", s)
}

// HashToken is how a secret is stored: hex sha256.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// principal is who is calling.
type principal struct {
	token meta.Token
}

func (p *principal) can(scope string) bool {
	if p == nil {
		return false
	}
	return slices.Contains(p.token.Scopes, ScopeAdmin) || slices.Contains(p.token.Scopes, scope)
}

// canPull: pull, any publish scope (publishers read what they publish) or admin.
func (p *principal) canPull() bool {
	if p == nil {
		return false
	}
	return slices.ContainsFunc(p.token.Scopes, func(s string) bool {
		return s == ScopeAdmin || s == ScopePull || strings.HasPrefix(s, ScopePublishPrefix)
	})
}

func (p *principal) canPublish(namespace string) bool {
	return p.can(ScopePublishPrefix + namespace)
}

func (p *principal) name() string {
	if p == nil {
		return "anonymous"
	}
	return p.token.Name + " (" + p.token.ID + ")"
}

// authError is a 401 (no or bad credentials) or 403 (outside the scope).
type authError struct {
	status int
	msg    string
}

func (e *authError) Error() string { return e.msg }

// authenticate reads the bearer token (or, for the go command, which sends
// .netrc credentials, the password of basic auth). No credentials is a nil
// principal, not an error.
func (s *Server) authenticate(ctx context.Context, r *http.Request) (*principal, error) {
	secret := ""
	if h := r.Header.Get("Authorization"); h != "" {
		if b, ok := strings.CutPrefix(h, "Bearer "); ok {
			secret = strings.TrimSpace(b)
		} else if _, pw, ok := r.BasicAuth(); ok {
			secret = pw
		} else {
			return nil, &authError{http.StatusUnauthorized, "Authorization header: want Bearer <token>"}
		}
	}
	return s.principalOf(ctx, secret)
}

// principalOf is the caller a token secret names; "" is anonymous (nil).
func (s *Server) principalOf(ctx context.Context, secret string) (*principal, error) {
	if secret == "" {
		return nil, nil
	}
	if local := s.cfg.LocalAdminToken; local != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(local)) == 1 {
		return &principal{token: meta.Token{ID: "local", Name: "local admin (endpoint file)", Scopes: []string{ScopeAdmin}}}, nil
	}
	t, err := s.meta.TokenByHash(ctx, HashToken(secret))
	if errors.Is(err, meta.ErrNotFound) {
		return nil, &authError{http.StatusUnauthorized, "unknown token"}
	}
	if err != nil {
		return nil, storageErr(fmt.Errorf("token lookup: %w", err))
	}
	now := s.now()
	switch {
	case !t.Revoked.IsZero():
		return nil, &authError{http.StatusUnauthorized, fmt.Sprintf("token %s was revoked at %s", t.ID, t.Revoked.Format(time.RFC3339))}
	case !t.Valid(now):
		return nil, &authError{http.StatusUnauthorized, fmt.Sprintf("token %s expired at %s", t.ID, t.Expires.Format(time.RFC3339))}
	}
	return &principal{token: t}, nil
}
