// Package meta is the registry's metadata: connector versions with their
// certification state and evidence, bearer tokens, and the audit log. Two
// backends implement Store, an embedded bbolt file (the zero-setup default)
// and PostgreSQL with embedded migrations, and both pass one conformance
// suite (package metatest).
package meta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/flowgen-dev/flowgen/registry/api"
)

// State is where a version is in its life (api.State: the wire and the
// store share the one vocabulary).
type State = api.State

// The states. A version is visible to pulls only when Certified.
const (
	Pending    = api.Pending
	Certifying = api.Certifying
	Certified  = api.Certified
	Rejected   = api.Rejected
)

// Key names one version (api.Key).
type Key = api.Key

// Version is one published connector version: the store keeps the same
// record the API sends (api.Version).
type Version = api.Version

// Query selects versions; empty fields match everything.
type Query struct {
	// Text matches a substring of namespace/connector, provider or summary.
	Text        string
	Namespace   string
	Connector   string
	Provider    string
	Effects     string
	Determinism string
	Capability  string
	// Module is a Go module path.
	Module string
	// States limits the states; empty means Certified only.
	States []State
}

// Matches reports whether v satisfies q.
func (q Query) Matches(v Version) bool {
	states := q.States
	if len(states) == 0 {
		states = []State{Certified}
	}
	eq := func(want, got string) bool { return want == "" || strings.EqualFold(want, got) }
	text := strings.ToLower(q.Text)
	return slices.Contains(states, v.State) && eq(q.Namespace, v.Namespace) && eq(q.Connector, v.Connector) &&
		eq(q.Provider, v.Provider) && eq(q.Effects, v.Effects) && eq(q.Determinism, v.Determinism) &&
		(q.Module == "" || q.Module == v.Module) &&
		(q.Capability == "" || slices.Contains(v.Capabilities, q.Capability)) &&
		(text == "" || strings.Contains(strings.ToLower(v.Namespace+"/"+v.Connector+" "+v.Provider+" "+v.Summary), text))
}

// Token is a bearer token. Only its hash is stored.
type Token struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Hash is the hex sha256 of the secret.
	Hash string `json:"hash"`
	// Scopes are "admin", "pull" or "publish:NAMESPACE".
	Scopes  []string  `json:"scopes"`
	Created time.Time `json:"created"`
	Revoked time.Time `json:"revoked,omitzero"`
	// Expires, when set, is when the token stops working.
	Expires time.Time `json:"expires,omitzero"`
	// Policy is the pull policy (YAML) bound to the token, if any; the
	// registry serves such a token only versions that satisfy it.
	Policy string `json:"policy,omitempty"`
}

// Valid reports whether the token works at now: not revoked, not expired.
func (t Token) Valid(now time.Time) bool {
	return t.Revoked.IsZero() && (t.Expires.IsZero() || now.Before(t.Expires))
}

// Event is one audit log entry.
type Event struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Actor   string    `json:"actor"`
	Action  string    `json:"action"`
	Subject string    `json:"subject"`
	Detail  string    `json:"detail,omitempty"`
}

// Store is the registry's metadata. Implementations are safe for concurrent
// use by several processes (PostgreSQL) or goroutines (bbolt).
type Store interface {
	// CreateVersion records a new version. Creating one that exists with
	// the same digest returns the stored version and created false; with
	// another digest it fails with a *ConflictError. The audit events
	// given are appended in the commit that creates the version, and only
	// then.
	CreateVersion(ctx context.Context, v Version, audit ...Event) (stored Version, created bool, err error)
	// GetVersion returns a version or ErrNotFound.
	GetVersion(ctx context.Context, k Key) (Version, error)
	// UpdateVersion applies fn to the stored version atomically; fn may not
	// change the key or the digest. The audit events given are appended
	// in the same commit: an update is never stored without them, nor
	// they without it. It returns the updated version.
	UpdateVersion(ctx context.Context, k Key, fn func(*Version) error, audit ...Event) (Version, error)
	// ListVersions returns a connector's versions in semver order, every
	// state included.
	ListVersions(ctx context.Context, namespace, connector string) ([]Version, error)
	// Search returns the versions q matches, ordered by namespace,
	// connector and semver.
	Search(ctx context.Context, q Query) ([]Version, error)

	// CreateToken stores a token; an existing ID or hash is an error. The
	// audit events given are appended in the same commit.
	CreateToken(ctx context.Context, t Token, audit ...Event) error
	// TokenByHash returns the token with that hash, revoked or not, or
	// ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (Token, error)
	// RevokeToken marks a token revoked at the given time, with the audit
	// events given in the same commit; ErrNotFound if there is no such
	// token.
	RevokeToken(ctx context.Context, id string, at time.Time, audit ...Event) error
	// ListTokens returns every token, oldest first.
	ListTokens(ctx context.Context) ([]Token, error)

	// AppendAudit adds an event; the store assigns Seq.
	AppendAudit(ctx context.Context, e Event) error
	// Audit returns up to limit events, newest first.
	Audit(ctx context.Context, limit int) ([]Event, error)
	// AuditAfter returns up to limit events with Seq greater than seq,
	// oldest first: the outbox that webhooks are delivered from.
	AuditAfter(ctx context.Context, seq int64, limit int) ([]Event, error)

	// Cursor returns the sequence number stored under name (0 when none
	// is); SetCursor stores it. Webhook deliveries remember their place
	// in the audit log with them.
	Cursor(ctx context.Context, name string) (int64, error)
	SetCursor(ctx context.Context, name string, seq int64) error

	Close() error
}

// ErrNotFound is returned for a missing version or token.
var ErrNotFound = errors.New("not found")

// ErrLocked is returned by OpenBolt when another process (a running
// registryd) has the file open: an embedded store has one owner.
var ErrLocked = errors.New("the metadata file is open in another process (a running registryd owns it)")

// ConflictError is a second upload of a version with another digest.
type ConflictError struct {
	Key             Key
	Stored, Offered string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s exists with digest %s; versions are write-once, and this upload is %s", e.Key, e.Stored, e.Offered)
}

// checkUpdate refuses changes to a version's identity.
func checkUpdate(before, after Version) error {
	if before.Key() != after.Key() || before.Digest != after.Digest {
		return fmt.Errorf("meta: %s: an update may not change the key or the digest", before.Key())
	}
	return nil
}

// sortVersions orders by namespace, connector, then semver (versions that
// do not parse sort after, by text).
func sortVersions(vs []Version) {
	slices.SortFunc(vs, func(a, b Version) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Connector, b.Connector); c != 0 {
			return c
		}
		av, aerr := semver.NewVersion(a.Version)
		bv, berr := semver.NewVersion(b.Version)
		switch {
		case aerr == nil && berr == nil:
			return av.Compare(bv)
		case aerr == nil:
			return -1
		case berr == nil:
			return 1
		}
		return strings.Compare(a.Version, b.Version)
	})
}

// sortTokens orders tokens oldest first, then by ID.
func sortTokens(ts []Token) {
	slices.SortFunc(ts, func(a, b Token) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
