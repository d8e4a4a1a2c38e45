package funcvalue

import (
	"fmt"
	"os"
	"time"
)

// Connector keeps the file system and the clock in a map of function
// values and calls them through it.
type Connector struct{}

var ops = map[string]any{"read": os.ReadFile, "now": time.Now}

// Run reads the input's file and the time.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	file := ""
	if in.File != nil {
		file = *in.File
	}
	b, err := ops["read"].(func(string) ([]byte, error))(file)
	now := ops["now"].(func() time.Time)()
	r := fmt.Sprintf("read %q (err %v) at %s", b, err, now.Format(time.RFC3339Nano))
	return Output{Result: &r}, nil
}
