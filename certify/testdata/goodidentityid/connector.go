package goodidentityid

import (
	"github.com/flowgen-dev/flowgen/runtime"
)

// upsert inserts the payment under the activation's idempotency key. On a
// conflict the no-op DO UPDATE lets RETURNING give back the row already
// recorded, so every delivery answers with the same payment id.
const upsert = `
INSERT INTO payments (idempotency_key, reference, account_id, amount_cents, currency)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (idempotency_key) DO UPDATE SET idempotency_key = EXCLUDED.idempotency_key
RETURNING payment_id`

// Connector records payments. It holds no state; the runtime binds the
// database.
type Connector struct{}

// Run records the payment and returns its id.
func (c *Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	rows, err := ctx.Query(upsert, ctx.IdempotencyKey(), in.Reference, in.AccountID, in.AmountCents, string(in.Currency))
	if err != nil {
		return Output{}, runtime.Errorf(runtime.Transient, "record payment: %v", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Output{}, runtime.Errorf(runtime.Transient, "record payment: %v", err)
		}
		return Output{}, runtime.Errorf(runtime.Permanent, "record payment: the upsert returned no row")
	}
	var id int64
	if err := rows.Scan(&id); err != nil {
		return Output{}, runtime.Errorf(runtime.SchemaMismatch, "record payment: %v", err)
	}
	if err := rows.Close(); err != nil {
		return Output{}, runtime.Errorf(runtime.Transient, "record payment: %v", err)
	}
	return Output{PaymentID: id, Reference: in.Reference}, nil
}
