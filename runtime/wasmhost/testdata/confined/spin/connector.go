package spin

import (
	"os"
	"strings"
)

// Connector does what its input says.
type Connector struct{}

var hoard [][]byte

// Run misbehaves.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	switch in.Do {
	case InputDoSpin:
		x := 0
		for {
			x++
		}
	case InputDoAllocate:
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	case InputDoPanic:
		var m map[string]int
		m["x"] = 1
	case InputDoExit:
		os.Exit(3)
	case InputDoBig:
		r := strings.Repeat("x", 33<<20)
		return Output{Result: &r}, nil
	}
	r := "fine"
	return Output{Result: &r}, nil
}
