package goodsortedkeys

import "slices"

// Connector deduplicates tags.
type Connector struct{}

// Run collects the tags in a set, then sorts its keys: the standard
// idiom, whose output does not depend on map order.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	set := map[string]bool{}
	for _, t := range in.Tags {
		set[t] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return Output{Tags: keys}, nil
}
