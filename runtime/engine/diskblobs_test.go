package engine_test

import (
	"testing"

	"github.com/flowgen-dev/flowgen/runtime/blobtest"
	"github.com/flowgen-dev/flowgen/runtime/engine"
)

func TestDiskBlobsConformance(t *testing.T) {
	t.Parallel()
	b, err := engine.NewDiskBlobs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Run(t, b, "")
}
