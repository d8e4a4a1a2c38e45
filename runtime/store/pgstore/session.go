package pgstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// A transaction runs on one connection taken from the pool, and its BEGIN
// costs no round trip of its own: it travels in front of the first
// statement, and the queued writes of the end travel in front of the
// COMMIT. Savepoints travel the same way, in front of the statement that
// follows them. lib/pq cannot send two extended-protocol statements
// without waiting in between, so these go as one simple-protocol query,
// with the parameters written into the text as typed literals (quoted by
// pq.QuoteLiteral, never spliced). A transaction that never reached the
// server commits without a word.

// session is a transaction in progress on one connection.
type session struct {
	ctx  context.Context
	conn *sql.Conn
	// prefix holds statements (BEGIN, SAVEPOINT, RELEASE, queued writes)
	// that travel in front of the next statement.
	prefix []ahead
	open   bool // BEGIN has been sent
}

// ahead is a statement waiting in a session's prefix; rows says it answers
// with rows (zero of them), which the statement behind it skips.
type ahead struct {
	text string
	rows bool
}

// query runs one statement of the transaction, behind the statements
// waiting in prefix.
func (s *session) query(q string, args ...any) (*sql.Rows, error) {
	if len(s.prefix) == 0 {
		return s.conn.QueryContext(s.ctx, q, args...)
	}
	text, err := inline(q, args)
	if err != nil {
		return nil, err
	}
	skip := 0
	parts := make([]string, 0, len(s.prefix)+1)
	for _, a := range s.prefix {
		parts = append(parts, a.text)
		if a.rows {
			skip++
		}
	}
	s.prefix, s.open = nil, true
	rows, err := s.conn.QueryContext(s.ctx, strings.Join(append(parts, text), "; "))
	if err != nil {
		return nil, err
	}
	for range skip {
		for rows.Next() {
		}
		if !rows.NextResultSet() {
			err := rows.Err()
			rows.Close()
			if err == nil {
				err = errors.New("pgstore: a statement sent ahead left no answer for the next")
			}
			return nil, err
		}
	}
	return rows, nil
}

// exec is query for a statement whose rows do not matter.
func (s *session) exec(q string, args ...any) error {
	rows, err := s.query(q, args...)
	if err != nil {
		return err
	}
	return rows.Close()
}

// queryRow is query for a statement that answers at most one row.
func (s *session) queryRow(q string, args ...any) scanner {
	rows, err := s.query(q, args...)
	return &firstRow{rows: rows, err: err}
}

// commit ends the transaction, sending what waits in prefix and q (with
// args), when q is not empty, in front of COMMIT.
func (s *session) commit(q string, args ...any) error {
	if q == "" && !s.open && len(s.prefix) <= 1 {
		return nil // nothing but BEGIN would reach the server
	}
	parts := make([]string, 0, len(s.prefix)+2)
	for _, a := range s.prefix {
		parts = append(parts, a.text)
	}
	if q != "" {
		stmt, err := inline(q, args)
		if err != nil {
			return err
		}
		parts = append(parts, stmt)
	}
	text := strings.Join(append(parts, "COMMIT"), "; ")
	s.prefix, s.open = nil, true // an error leaves the transaction open: rollback ends it
	if _, err := s.conn.ExecContext(s.ctx, text); err != nil {
		return err
	}
	s.open = false
	return nil
}

// release rolls back a transaction that did not commit and hands the
// connection back to the pool, or drops it when its state is unknown.
func (s *session) release() {
	if s.open {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.conn.ExecContext(ctx, "ROLLBACK")
		cancel()
		if err != nil {
			s.conn.Raw(func(any) error { return driver.ErrBadConn }) // never reuse it
		}
	}
	s.conn.Close()
}

// firstRow scans the first row of rows like sql.Row does.
type firstRow struct {
	rows *sql.Rows
	err  error
}

func (r *firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// inline writes args into q's placeholders ($1 ...) as typed literals.
func inline(q string, args []any) (string, error) {
	lits := make([]string, len(args))
	for i, a := range args {
		lit, err := literal(a)
		if err != nil {
			return "", fmt.Errorf("parameter $%d: %w", i+1, err)
		}
		lits[i] = lit
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] != '$' || i+1 >= len(q) || q[i+1] < '0' || q[i+1] > '9' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		if n < 1 || n > len(lits) {
			return "", fmt.Errorf("placeholder $%d of %d parameters", n, len(lits))
		}
		b.WriteString(lits[n-1])
		i = j - 1
	}
	return b.String(), nil
}

// errLiteral: a parameter of a type the store never sends.
var errLiteral = errors.New("no literal form")

// literal is one parameter as a typed SQL literal.
func literal(a any) (string, error) {
	switch v := a.(type) {
	case nil:
		return "NULL", nil
	case []byte:
		if v == nil {
			return "NULL::bytea", nil
		}
		return pq.QuoteLiteral(`\x`+hex.EncodeToString(v)) + "::bytea", nil
	case string:
		return pq.QuoteLiteral(v) + "::text", nil
	case int64:
		return "(" + strconv.FormatInt(v, 10) + ")::bigint", nil
	case int:
		return "(" + strconv.Itoa(v) + ")::bigint", nil
	case bool:
		return strconv.FormatBool(v), nil
	case pq.ByteaArray:
		return arrayLiteral(v, "bytea[]")
	case pq.Int64Array:
		return arrayLiteral(v, "bigint[]")
	case pq.StringArray:
		return arrayLiteral(v, "text[]")
	}
	return "", fmt.Errorf("%T: %w", a, errLiteral)
}

// arrayLiteral is an array in lib/pq's text form, quoted and cast.
func arrayLiteral(a driver.Valuer, typ string) (string, error) {
	v, err := a.Value()
	if err != nil || v == nil {
		return "NULL::" + typ, err
	}
	return pq.QuoteLiteral(v.(string)) + "::" + typ, nil
}
