package harness

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/flowgen-dev/flowgen/certify/wire"
)

// dbHandle is the *sql.DB behind the db capabilities: a database/sql
// driver whose every statement is a request to the recorder, which runs it
// on the fixture database.
type dbHandle struct{ *sql.DB }

func newDB(c *client) dbHandle { return dbHandle{sql.OpenDB(dbConnector{c})} }

type dbConnector struct{ c *client }

func (d dbConnector) Connect(context.Context) (driver.Conn, error) { return dbConn(d), nil }
func (d dbConnector) Driver() driver.Driver                        { return dbDriver{} }

type dbDriver struct{}

func (dbDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("the recorder database is opened with sql.OpenDB")
}

type dbConn struct{ c *client }

var errNoTx = errors.New("transactions are not part of the db capabilities: use single statements")

func (c dbConn) Prepare(query string) (driver.Stmt, error) { return dbStmt{c, query}, nil }
func (dbConn) Close() error                                { return nil }
func (dbConn) Begin() (driver.Tx, error)                   { return nil, errNoTx }

// QueryContext implements driver.QueryerContext.
func (c dbConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	resp, err := c.do(ctx, false, query, args)
	if err != nil {
		return nil, err
	}
	return &dbRows{columns: resp.Columns, rows: resp.Rows}, nil
}

// ExecContext implements driver.ExecerContext.
func (c dbConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	resp, err := c.do(ctx, true, query, args)
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(resp.RowsAffected), nil
}

func (c dbConn) do(ctx context.Context, exec bool, query string, args []driver.NamedValue) (*wire.DBResponse, error) {
	req := wire.DBRequest{Exec: exec, Query: query}
	for _, a := range args {
		v, ok := wire.ValueOf(a.Value)
		if !ok {
			return nil, fmt.Errorf("argument %d: unsupported type %T", a.Ordinal, a.Value)
		}
		req.Args = append(req.Args, v)
	}
	var resp wire.DBResponse
	if err := c.c.call(ctx, http.MethodPost, wire.PathDB, req, &resp); err != nil {
		return nil, driver.ErrBadConn
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return &resp, nil
}

type dbStmt struct {
	c     dbConn
	query string
}

func (s dbStmt) Close() error  { return nil }
func (s dbStmt) NumInput() int { return -1 }

func (s dbStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.c.ExecContext(context.Background(), s.query, named(args))
}

func (s dbStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.c.QueryContext(context.Background(), s.query, named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

type dbRows struct {
	columns []string
	rows    [][]wire.Value
	next    int
}

func (r *dbRows) Columns() []string { return r.columns }
func (r *dbRows) Close() error      { return nil }

func (r *dbRows) Next(dest []driver.Value) error {
	if r.next >= len(r.rows) {
		return io.EOF
	}
	row := r.rows[r.next]
	r.next++
	for i := range dest {
		if i < len(row) {
			dest[i] = row[i].Any()
		}
	}
	return nil
}
