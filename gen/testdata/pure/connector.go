package pure

import (
	"strings"
	"unicode"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector is the hand-written half of text.slug.
type Connector struct{}

// Run lower-cases the title and joins its ASCII words with hyphens.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	words := strings.FieldsFunc(strings.ToLower(in.Title), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) || r > unicode.MaxASCII
	})
	if len(words) == 0 {
		return Output{}, runtime.Errorf(runtime.Permanent, "title %q has no ASCII letters or digits to make a slug of", in.Title)
	}
	return Output{Slug: strings.Join(words, "-")}, nil
}
