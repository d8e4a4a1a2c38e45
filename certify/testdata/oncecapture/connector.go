package oncecapture

import "sync"

// Connector keeps the first id it sees, under sync.Once, and answers it
// to every later activation: state that outlives the activation, however
// it is guarded.
type Connector struct{}

var (
	firstOnce sync.Once
	first     string
)

// Run returns the first activation's id as its note.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	firstOnce.Do(func() { first = in.ID })
	note := first
	return Output{ID: in.ID, Note: &note}, nil
}
