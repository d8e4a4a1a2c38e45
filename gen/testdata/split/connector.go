package split

import "strings"

// Connector is the hand-written half of text.split.
type Connector struct{}

// Run splits the text into non-empty lines.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	out := Output{Kind: OutputKindOne}
	for _, line := range strings.Split(in.Text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out.Items = append(out.Items, OutputItemsItem{Title: line})
		}
	}
	if len(out.Items) > 1 {
		out.Kind = OutputKindMany
	}
	return out, nil
}
