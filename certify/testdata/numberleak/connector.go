package numberleak

import "strconv"

// Connector makes payment references.
type Connector struct{}

// Run puts the account number into a public number field, where a search
// of strings alone never looks.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	s := strconv.FormatInt(in.Account, 10)
	return Output{Reference: in.Order + "/" + s[len(s)-4:], Check: in.Account}, nil
}
