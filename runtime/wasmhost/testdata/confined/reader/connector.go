package reader

// Connector runs the input's query and counts the rows.
type Connector struct{}

// Run queries.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	rows, err := ctx.Query(in.Query)
	if err != nil {
		return Output{}, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return Output{}, err
	}
	return Output{Rows: &n}, nil
}
