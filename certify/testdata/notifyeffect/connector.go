package notifyeffect

// Connector records paid orders.
type Connector struct{}

// Run inserts the order once, whatever the deliveries, and notifies the
// warehouse's listeners every time: no row changes on a redelivery, but
// the warehouse ships again.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	rows, err := ctx.Query(`WITH ins AS (INSERT INTO paid VALUES ($1) ON CONFLICT DO NOTHING) SELECT pg_notify('ship_order', $1)`, in.Order)
	if err != nil {
		return Output{}, err
	}
	rows.Close()
	return Output{Recorded: true}, nil
}
