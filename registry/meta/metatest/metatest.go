// Package metatest is the conformance suite every meta.Store backend
// passes, run against the real thing (a bbolt file, PostgreSQL).
package metatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry/meta"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func version(ns, name, v, digest string, state meta.State) meta.Version {
	return meta.Version{Namespace: ns, Connector: name, Version: v, Digest: digest, State: state,
		Module: "flowgen.dev/connectors/" + ns + "/" + name, ModuleVersion: "v" + v, Size: 100,
		Provider: "stripe", Effects: "Effectful", Determinism: "BestEffort", Capabilities: []string{"http.write", "secrets"},
		Summary: "Capture a card payment", Created: t0, Updated: t0}
}

// Run runs the suite; open returns a fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) meta.Store) {
	ctx := context.Background()
	fresh := func(t *testing.T) meta.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("VersionsAreWriteOnce", func(t *testing.T) {
		s := fresh(t)
		v := version("payments", "charge", "2.1.0", "sha256:aa", meta.Pending)
		got, created, err := s.CreateVersion(ctx, v)
		if err != nil || !created || got.Digest != v.Digest {
			t.Fatalf("create: %+v %v %v", got, created, err)
		}
		got, created, err = s.CreateVersion(ctx, v)
		if err != nil || created || got.Digest != v.Digest {
			t.Fatalf("the same version and digest again must be idempotent: %+v %v %v", got, created, err)
		}
		other := v
		other.Digest = "sha256:bb"
		_, _, err = s.CreateVersion(ctx, other)
		var ce *meta.ConflictError
		if !errors.As(err, &ce) || ce.Stored != "sha256:aa" || ce.Offered != "sha256:bb" {
			t.Fatalf("another digest: want a ConflictError naming both, got %v", err)
		}
		back, err := s.GetVersion(ctx, v.Key())
		if err != nil || back.Digest != "sha256:aa" || back.Module != v.Module || !slices.Equal(back.Capabilities, v.Capabilities) || !back.Created.Equal(t0) {
			t.Fatalf("get: %+v %v", back, err)
		}
		if _, err := s.GetVersion(ctx, meta.Key{Namespace: "payments", Connector: "charge", Version: "9.9.9"}); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("missing version: %v", err)
		}
	})
	t.Run("ConcurrentCreatesOneWins", func(t *testing.T) {
		s := fresh(t)
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, results[i] = s.CreateVersion(ctx, version("ns", "race", "1.0.0", fmt.Sprintf("sha256:%02d", i), meta.Pending))
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range results {
			var ce *meta.ConflictError
			switch {
			case err == nil:
				wins++
			case !errors.As(err, &ce):
				t.Fatalf("unexpected error: %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d uploads won, want exactly 1", wins)
		}
	})
	t.Run("UpdateVersion", func(t *testing.T) {
		s := fresh(t)
		v := version("payments", "charge", "1.0.0", "sha256:aa", meta.Pending)
		s.CreateVersion(ctx, v)
		got, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error {
			v.State, v.Progress = meta.Certified, "[11/11] signature"
			v.Blobs = map[string]string{"report.json": "sha256:cc"}
			return nil
		})
		if err != nil || got.State != meta.Certified {
			t.Fatalf("update: %+v %v", got, err)
		}
		back, _ := s.GetVersion(ctx, v.Key())
		if back.State != meta.Certified || back.Blobs["report.json"] != "sha256:cc" || back.Progress != "[11/11] signature" {
			t.Fatalf("update not stored: %+v", back)
		}
		if _, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error { v.Digest = "sha256:evil"; return nil }); err == nil {
			t.Fatal("an update changed the digest")
		}
		boom := errors.New("boom")
		if _, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error { v.Yanked = "half"; return boom }); !errors.Is(err, boom) {
			t.Fatalf("fn's error: %v", err)
		}
		if back, _ := s.GetVersion(ctx, v.Key()); back.Digest != "sha256:aa" || back.Yanked != "" {
			t.Fatalf("a refused update left a trace: %+v", back)
		}
		if _, err := s.UpdateVersion(ctx, meta.Key{Namespace: "x", Connector: "y", Version: "1.0.0"}, func(*meta.Version) error { return nil }); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("update of a missing version: %v", err)
		}
	})
	t.Run("ConcurrentUpdatesAreNotLost", func(t *testing.T) {
		s := fresh(t)
		v := version("ns", "counter", "1.0.0", "sha256:aa", meta.Certifying)
		s.CreateVersion(ctx, v)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error {
					if v.Blobs == nil {
						v.Blobs = map[string]string{}
					}
					v.Blobs[fmt.Sprint(i)] = "x"
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if back, _ := s.GetVersion(ctx, v.Key()); len(back.Blobs) != 20 {
			t.Fatalf("%d of 20 concurrent updates survived", len(back.Blobs))
		}
	})
	t.Run("ListAndSearch", func(t *testing.T) {
		s := fresh(t)
		for _, v := range []meta.Version{
			version("payments", "charge", "1.10.0", "sha256:01", meta.Certified),
			version("payments", "charge", "1.9.0", "sha256:02", meta.Certified),
			version("payments", "charge", "2.0.0-rc.1", "sha256:03", meta.Pending),
			version("payments", "charge", "2.0.0", "sha256:04", meta.Rejected),
			func() meta.Version {
				v := version("catalog", "lookup", "1.0.0", "sha256:05", meta.Certified)
				v.Provider, v.Effects, v.Determinism, v.Capabilities, v.Summary = "shop", "ReadOnly", "Stable", []string{"http.read.pinned"}, "Read a product"
				v.Module = "example.com/catalog/lookup"
				return v
			}(),
		} {
			if _, _, err := s.CreateVersion(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.ListVersions(ctx, "payments", "charge")
		if got := versions(list); err != nil || !slices.Equal(got, []string{"1.9.0", "1.10.0", "2.0.0-rc.1", "2.0.0"}) {
			t.Fatalf("semver order: %v %v", got, err)
		}
		for _, c := range []struct {
			q    meta.Query
			want []string
		}{
			{meta.Query{}, []string{"catalog/lookup@1.0.0", "payments/charge@1.9.0", "payments/charge@1.10.0"}},
			{meta.Query{Capability: "http.read.pinned"}, []string{"catalog/lookup@1.0.0"}},
			{meta.Query{Effects: "effectful"}, []string{"payments/charge@1.9.0", "payments/charge@1.10.0"}},
			{meta.Query{Determinism: "Stable", Provider: "shop"}, []string{"catalog/lookup@1.0.0"}},
			{meta.Query{Text: "PRODUCT"}, []string{"catalog/lookup@1.0.0"}},
			{meta.Query{Namespace: "payments", States: []meta.State{meta.Pending, meta.Rejected}}, []string{"payments/charge@2.0.0-rc.1", "payments/charge@2.0.0"}},
			{meta.Query{Connector: "nothing"}, nil},
			{meta.Query{Module: "example.com/catalog/lookup"}, []string{"catalog/lookup@1.0.0"}},
		} {
			got, err := s.Search(ctx, c.q)
			if err != nil || !slices.Equal(keys(got), c.want) {
				t.Errorf("search %+v: %v %v, want %v", c.q, keys(got), err, c.want)
			}
		}
	})
	t.Run("Tokens", func(t *testing.T) {
		s := fresh(t)
		a := meta.Token{ID: "tok_a", Name: "ci", Hash: "h-a", Scopes: []string{"publish:payments"}, Created: t0}
		b := meta.Token{ID: "tok_b", Name: "platform", Hash: "h-b", Scopes: []string{"pull"}, Created: t0.Add(time.Minute), Expires: t0.Add(48 * time.Hour), Policy: "strict"}
		for _, tok := range []meta.Token{b, a} {
			if err := s.CreateToken(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateToken(ctx, meta.Token{ID: "tok_a", Hash: "h-other", Created: t0}); err == nil {
			t.Error("a second token with the same ID was stored")
		}
		if err := s.CreateToken(ctx, meta.Token{ID: "tok_c", Hash: "h-a", Created: t0}); err == nil {
			t.Error("a second token with the same hash was stored")
		}
		got, err := s.TokenByHash(ctx, "h-b")
		if err != nil || got.ID != "tok_b" || got.Policy != "strict" || !slices.Equal(got.Scopes, []string{"pull"}) || !got.Revoked.IsZero() || !got.Expires.Equal(t0.Add(48*time.Hour)) {
			t.Fatalf("by hash: %+v %v", got, err)
		}
		if _, err := s.TokenByHash(ctx, "h-none"); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
		revoked := t0.Add(time.Hour)
		if err := s.RevokeToken(ctx, "tok_b", revoked); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeToken(ctx, "tok_b", revoked.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.TokenByHash(ctx, "h-b"); !got.Revoked.Equal(revoked) {
			t.Fatalf("revoked at %v, want the first revocation %v", got.Revoked, revoked)
		}
		if err := s.RevokeToken(ctx, "tok_none", revoked); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("revoke unknown: %v", err)
		}
		list, err := s.ListTokens(ctx)
		if err != nil || len(list) != 2 || list[0].ID != "tok_a" || list[1].ID != "tok_b" {
			t.Fatalf("list: %+v %v", list, err)
		}
	})
	t.Run("Audit", func(t *testing.T) {
		s := fresh(t)
		for i := range 5 {
			if err := s.AppendAudit(ctx, meta.Event{Time: t0.Add(time.Duration(i) * time.Second), Actor: "ci", Action: "publish", Subject: fmt.Sprint("v", i)}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Audit(ctx, 3)
		if err != nil || len(got) != 3 {
			t.Fatalf("audit: %+v %v", got, err)
		}
		if got[0].Subject != "v4" || got[2].Subject != "v2" || got[0].Seq <= got[1].Seq || !got[0].Time.Equal(t0.Add(4*time.Second)) {
			t.Fatalf("want the newest three, newest first, with increasing sequence numbers: %+v", got)
		}
	})
	t.Run("ChangesCommitWithTheirAuditEvents", func(t *testing.T) {
		s := fresh(t)
		subjects := func() []string {
			events, err := s.Audit(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range events {
				out = append(out, e.Action+" "+e.Subject)
			}
			return out
		}
		v := version("ns", "c", "1.0.0", "sha256:aa", meta.Pending)
		event := func(action string) meta.Event {
			return meta.Event{Time: t0, Actor: "ci", Action: action, Subject: v.Key().String()}
		}
		if _, created, err := s.CreateVersion(ctx, v, event("publish")); err != nil || !created {
			t.Fatalf("create: %v %v", created, err)
		}
		if _, created, err := s.CreateVersion(ctx, v, event("publish")); err != nil || created {
			t.Fatalf("create again: %v %v", created, err)
		}
		if _, _, err := s.CreateVersion(ctx, version("ns", "c", "1.0.0", "sha256:bb", meta.Pending), event("conflict")); err == nil {
			t.Fatal("a create with another digest went through")
		}
		boom := errors.New("boom")
		if _, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error { return boom }, event("refused")); !errors.Is(err, boom) {
			t.Fatalf("refused update: %v", err)
		}
		if _, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error { v.Digest = "sha256:evil"; return nil }, event("evil")); err == nil {
			t.Fatal("an update changed the digest")
		}
		if _, err := s.UpdateVersion(ctx, v.Key(), func(v *meta.Version) error { v.State = meta.Certified; return nil }, event("certified")); err != nil {
			t.Fatal(err)
		}
		tok := meta.Token{ID: "tok_a", Name: "ci", Hash: "h-a", Created: t0}
		tokEvent := func(action string) meta.Event {
			return meta.Event{Time: t0, Actor: "ci", Action: action, Subject: tok.ID}
		}
		if err := s.CreateToken(ctx, tok, tokEvent("token-create")); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, tok, tokEvent("token-create-again")); err == nil {
			t.Fatal("a token was stored twice")
		}
		if err := s.RevokeToken(ctx, tok.ID, t0, tokEvent("token-revoke")); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeToken(ctx, "tok_missing", t0, tokEvent("token-revoke-missing")); !errors.Is(err, meta.ErrNotFound) {
			t.Fatalf("revoking a missing token: %v", err)
		}
		want := []string{"token-revoke tok_a", "token-create tok_a", "certified " + v.Key().String(), "publish " + v.Key().String()}
		if got := subjects(); !slices.Equal(got, want) {
			t.Fatalf("audit log %q, want %q: one event per committed change, none for a refused one", got, want)
		}
	})
	t.Run("AuditAfterAndCursors", func(t *testing.T) {
		s := fresh(t)
		for i := range 5 {
			if err := s.AppendAudit(ctx, meta.Event{Time: t0, Actor: "ci", Action: "publish", Subject: fmt.Sprint("v", i)}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.AuditAfter(ctx, 0, 100)
		if err != nil || len(all) != 5 || all[0].Subject != "v0" || all[4].Subject != "v4" {
			t.Fatalf("after 0: %+v %v", all, err)
		}
		rest, err := s.AuditAfter(ctx, all[1].Seq, 2)
		if err != nil || len(rest) != 2 || rest[0].Subject != "v2" || rest[1].Subject != "v3" {
			t.Fatalf("after the second, two: %+v %v", rest, err)
		}
		if none, err := s.AuditAfter(ctx, all[4].Seq, 10); err != nil || len(none) != 0 {
			t.Fatalf("after the last: %+v %v", none, err)
		}
		if c, err := s.Cursor(ctx, "hook"); err != nil || c != 0 {
			t.Fatalf("a cursor never set: %d %v", c, err)
		}
		for _, seq := range []int64{all[1].Seq, all[3].Seq} {
			if err := s.SetCursor(ctx, "hook", seq); err != nil {
				t.Fatal(err)
			}
			if c, err := s.Cursor(ctx, "hook"); err != nil || c != seq {
				t.Fatalf("cursor %d, want %d (%v)", c, seq, err)
			}
		}
		if c, _ := s.Cursor(ctx, "other"); c != 0 {
			t.Fatalf("cursors are not separate: %d", c)
		}
	})
}

func versions(vs []meta.Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Version)
	}
	return out
}

func keys(vs []meta.Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Key().String())
	}
	return out
}
