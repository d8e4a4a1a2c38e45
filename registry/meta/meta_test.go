package meta_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/registry/meta/metatest"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

func TestBoltConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		s, err := meta.OpenBolt(filepath.Join(t.TempDir(), "registry.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPostgresConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T) meta.Store {
		s, err := meta.OpenPostgres(context.Background(), pgtest.FreshSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestPostgresMigrationsRoundTrip: the registry schema migrates up, down
// and up again, and concurrent openers do not trip over each other.
func TestPostgresMigrationsRoundTrip(t *testing.T) {
	url := pgtest.FreshSchema(t)
	ctx := context.Background()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := meta.OpenPostgres(ctx, url)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s, err := meta.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	// Down undoes the newest migration and says which it was.
	if v, err := meta.Migrations.Down(ctx, db); err != nil || v != 2 {
		t.Fatalf("down: %d %v", v, err)
	}
	if done, err := meta.Migrations.Up(ctx, db); err != nil || len(done) != 1 {
		t.Fatalf("up again: %v %v", done, err)
	}
}
