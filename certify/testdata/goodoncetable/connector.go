package goodoncetable

import (
	"strings"
	"sync"
)

// Connector upper-cases ids through a table it builds the first time it
// needs it: lazy initialisation, the same table in every process.
type Connector struct{}

var (
	tableOnce sync.Once
	table     map[rune]rune
)

// buildTable fills the table; only tableOnce runs it.
func buildTable() {
	table = map[rune]rune{}
	for r := 'a'; r <= 'z'; r++ {
		table[r] = r - 'a' + 'A'
	}
}

// Run upper-cases the id's letters and leaves the rest.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	tableOnce.Do(buildTable)
	id := strings.Map(func(r rune) rune {
		if u, ok := table[r]; ok {
			return u
		}
		return r
	}, in.ID)
	return Output{ID: id}, nil
}
