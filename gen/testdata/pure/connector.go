package pure

import (
	"strings"
	"unicode"
)

// Connector is the hand-written half of text.slug.
type Connector struct{}

// Run lower-cases the title and joins its words with hyphens.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	words := strings.FieldsFunc(strings.ToLower(in.Title), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII
	})
	return Output{Slug: strings.Join(words, "-")}, nil
}
