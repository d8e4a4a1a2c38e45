package upsertorder

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector writes paid orders to the warehouse database. It holds no state;
// the runtime binds the database (engine.Grants.DB).
type Connector struct{}

// Run inserts the order, or updates it when the charge it records changed,
// and returns the row's version. Writing the same charge twice changes
// nothing and returns the same version, so replays are harmless.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	table := *params.Table // the params schema restricts it to an identifier
	upsert := fmt.Sprintf(`
		INSERT INTO %[1]s AS t (order_id, charge_id, amount_cents, currency, status, row_version)
		VALUES ($1, $2, $3, $4, $5, 1)
		ON CONFLICT (order_id) DO UPDATE
		SET charge_id = EXCLUDED.charge_id, amount_cents = EXCLUDED.amount_cents,
		    currency = EXCLUDED.currency, status = EXCLUDED.status, row_version = t.row_version + 1
		WHERE (t.charge_id, t.amount_cents, t.currency, t.status)
		      IS DISTINCT FROM (EXCLUDED.charge_id, EXCLUDED.amount_cents, EXCLUDED.currency, EXCLUDED.status)
		RETURNING row_version`, table)
	version, err := queryVersion(ctx, upsert, in.OrderID, in.ChargeID, in.AmountCents, string(in.Currency), string(in.Status))
	if errors.Is(err, sql.ErrNoRows) { // unchanged: read the current version
		version, err = queryVersion(ctx, fmt.Sprintf(`SELECT row_version FROM %s WHERE order_id = $1`, table), in.OrderID)
	}
	if err != nil {
		return Output{}, err
	}
	return Output{OrderID: in.OrderID, RowVersion: version}, nil
}

func queryVersion(ctx Context, query string, args ...any) (int64, error) {
	rows, err := ctx.Query(query, args...)
	if err != nil {
		return 0, runtime.Errorf(runtime.Transient, "upsert order: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return 0, runtime.Errorf(runtime.Transient, "upsert order: %w", err)
		}
		return 0, sql.ErrNoRows
	}
	var v int64
	if err := rows.Scan(&v); err != nil {
		return 0, runtime.Errorf(runtime.Permanent, "upsert order: %w", err)
	}
	return v, rows.Close()
}
