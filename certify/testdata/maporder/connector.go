package maporder

// Connector lists the map's keys.
type Connector struct{}

// Run appends keys in map order, which Go randomises.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	var keys []string
	for k := range in.M {
		keys = append(keys, k)
	}
	return Output{Keys: keys}, nil
}
