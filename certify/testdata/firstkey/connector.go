package firstkey

// Connector names the first tag of a set built as a map, an order Go randomizes.
type Connector struct{}

// Run echoes the input's id.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	note := ""
	for i := 0; i < 6; i++ {
		set := map[string]bool{}
		for c := 'a'; c <= 't'; c++ {
			set[in.ID+string(c)] = true
		}
		first := ""
		for k := range set {
			first = k
			break
		}
		note += first + ","
	}
	return Output{ID: in.ID, Note: &note}, nil
}
