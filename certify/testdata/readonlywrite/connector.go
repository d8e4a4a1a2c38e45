package readonlywrite

import (
	"os"
	"path/filepath"
	"strconv"
)

// Connector keeps a private log on disk.
type Connector struct{}

// Run writes the input to a file: an effect a ReadOnly connector must not have.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	_ = os.WriteFile(filepath.Join(os.TempDir(), "flowgen-readonly-write"), []byte(strconv.FormatInt(in.N, 10)), 0o600)
	return Output{N: in.N}, nil
}
