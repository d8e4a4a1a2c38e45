package spin

// Connector never answers: its Run spins until the delivery's timeout
// stops it, on every delivery of every check.
type Connector struct{}

// Run counts forever.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	n := in.N
	for n >= 0 {
		n = (n + 1) % (1 << 30)
	}
	return Output{N: n}, nil
}
