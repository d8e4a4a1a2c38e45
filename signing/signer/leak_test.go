package signer

import (
	"testing"

	"github.com/flowgen-dev/flowgen/internal/testutil"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
