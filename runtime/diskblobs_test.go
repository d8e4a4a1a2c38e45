package runtime_test

import (
	"testing"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/blobtest"
)

func TestDiskBlobsConformance(t *testing.T) {
	t.Parallel()
	b, err := runtime.NewDiskBlobs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Run(t, b, "")
}
