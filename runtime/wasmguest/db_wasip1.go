//go:build wasip1

package wasmguest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"unsafe"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// DBRead proxies db.read (and the queries of db.write): the host runs each
// query on the database bound to the connector, a db.read-only one in a
// read-only transaction, and returns every row.
type DBRead struct{}

// DBWrite proxies db.write's statements.
type DBWrite struct{}

//go:wasmimport flowgen db_query
func hostDBQuery(req unsafe.Pointer, n uint32) uint32

//go:wasmimport flowgen db_exec
func hostDBExec(req unsafe.Pointer, n uint32) uint32

// db is the connector's database handle: database/sql over a driver
// whose every query and statement is a host call.
var db *sql.DB

// OpenDB opens the database handle behind DBRead and DBWrite; the main
// package of a connector with a database passes it to Serve, so that the
// handle's goroutine starts before any activation and is not counted
// against one.
func OpenDB() { db = sql.OpenDB(hostConnector{}) }

// QueryContext implements runtime.DBReader.
func (DBRead) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.QueryContext(ctx, query, args...)
}

// ExecContext implements runtime.DBWriter.
func (DBWrite) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return db.ExecContext(ctx, query, args...)
}

type hostConnector struct{}

func (hostConnector) Connect(context.Context) (driver.Conn, error) { return hostConn{}, nil }
func (hostConnector) Driver() driver.Driver                        { return hostDriver{} }

type hostDriver struct{}

func (hostDriver) Open(string) (driver.Conn, error) { return hostConn{}, nil }

// hostConn sends each query and statement to the host as it is; it
// prepares nothing and offers no transactions (the host holds none open
// across calls).
type hostConn struct{}

var errNoPrepare = errors.New("a confined connector's database calls are not prepared: call QueryContext or ExecContext")

func (hostConn) Prepare(string) (driver.Stmt, error) { return nil, errNoPrepare }
func (hostConn) Close() error                        { return nil }
func (hostConn) Begin() (driver.Tx, error) {
	return nil, runtime.Errorf(runtime.PolicyDenied, "a confined connector cannot open a transaction; each statement commits on its own")
}

func encodeDB(query string, args []driver.NamedValue) ([]byte, error) {
	q := wasmabi.DBRequest{Query: query}
	for _, a := range args {
		if a.Name != "" {
			return nil, runtime.Errorf(runtime.Permanent, "named argument %s: use positional arguments", a.Name)
		}
		q.Args = append(q.Args, a.Value)
	}
	var w wasmabi.Writer
	if err := q.Append(&w); err != nil {
		return nil, runtime.NewError(runtime.Permanent, err)
	}
	return w.Bytes(), nil
}

func (hostConn) QueryContext(_ context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	req, err := encodeDB(query, args)
	if err != nil {
		return nil, err
	}
	r, err := hostCall(hostDBQuery, req)
	if err != nil {
		return nil, err
	}
	rows := r.Rows()
	if err := done(r); err != nil {
		return nil, err
	}
	return &hostRows{rows: rows}, nil
}

func (hostConn) ExecContext(_ context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	req, err := encodeDB(query, args)
	if err != nil {
		return nil, err
	}
	r, err := hostCall(hostDBExec, req)
	if err != nil {
		return nil, err
	}
	return hostResult{r.ExecResult()}, done(r)
}

type hostRows struct {
	rows wasmabi.Rows
	next int
}

func (r *hostRows) Columns() []string { return r.rows.Columns }
func (r *hostRows) Close() error      { return nil }
func (r *hostRows) Next(dest []driver.Value) error {
	if r.next >= len(r.rows.Values) {
		return io.EOF
	}
	for i, v := range r.rows.Values[r.next] {
		dest[i] = v
	}
	r.next++
	return nil
}

type hostResult struct{ res wasmabi.ExecResult }

func (r hostResult) LastInsertId() (int64, error) {
	if !r.res.HasLastInsertID {
		return 0, errors.New("the database reports no last insert id")
	}
	return r.res.LastInsertID, nil
}

func (r hostResult) RowsAffected() (int64, error) {
	if !r.res.HasRowsAffected {
		return 0, errors.New("the database reports no rows affected")
	}
	return r.res.RowsAffected, nil
}
