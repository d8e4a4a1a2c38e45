package piimasked

import "strings"

// Connector references contacts.
type Connector struct{}

// Run derives the public reference from the email's local part, shifted
// by 13 letters: anyone can shift it back.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	local, _, _ := strings.Cut(in.Email, "@")
	ref := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, local)
	return Output{ID: in.ID, Ref: ref}, nil
}
