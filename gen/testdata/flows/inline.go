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

// Poll is what Attempt takes and returns: how many attempts were made and
// whether the last one found the work ready.
type Poll struct {
	Tries int  `json:"tries"`
	Need  int  `json:"need"`
	Ready bool `json:"ready"`
}

// Attempt is one pass of loop.yaml: ready once Need tries were made.
func Attempt(in Poll) (Poll, error) {
	in.Tries++
	in.Ready = in.Tries >= in.Need
	return in, nil
}

// Summary is what Report returns.
type Summary struct {
	After int `json:"after"`
}

// Report ends loop.yaml.
func Report(in Poll) (Summary, error) { return Summary{After: in.Tries}, nil }
