package flows

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/flowgen-dev/flowgen/gen/testdata/pure"
)

// Loud is what Shout returns.
type Loud struct {
	Text string `json:"text"`
}

// Shout upper-cases a slug; it is the inline node "shout" of inline.yaml.
func Shout(in pure.Output) (Loud, error) {
	return Loud{Text: strings.ToUpper(in.Slug)}, nil
}

// Length is what CountRunes returns.
type Length struct {
	Runes int `json:"runes"`
}

// CountRunes counts a text's characters; it takes a context to show the
// second inline form.
func CountRunes(_ context.Context, in Loud) (Length, error) {
	return Length{Runes: utf8.RuneCountInString(in.Text)}, nil
}
