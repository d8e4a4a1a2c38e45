package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/store"
	"github.com/flowgen-dev/flowgen/runtime/store/boltstore"
	"github.com/flowgen-dev/flowgen/runtime/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		path := filepath.Join(t.TempDir(), "flowgen.db")
		return storetest.Backend{Open: func(now func() time.Time) (store.Store, error) {
			return boltstore.Open(path, boltstore.Options{Now: now})
		}}
	})
}
