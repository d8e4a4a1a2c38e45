// Package pgwire counts what a PostgreSQL client asks of the server, from
// the frontend protocol it writes on the wire: round trips, statements and
// commits. Benchmarks wrap a store's connections with a Counter to report
// the cost of the step protocol per activation, whatever the driver does
// inside (prepared or not, pipelined or not).
//
// A round trip is a write after a read: the client sent something and
// waits for the answer before it sends again. A statement is an Execute
// message of the extended protocol or one statement of a simple Query
// message, which may hold several separated by semicolons (BEGIN and
// COMMIT included); a commit is a COMMIT statement.
// Connections must not use TLS (sslmode=disable): the counter reads the
// messages in the clear.
package pgwire

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"
)

// Counts are what a Counter has seen so far.
type Counts struct {
	RoundTrips int64
	Statements int64
	Commits    int64
}

// Sub returns c minus an earlier reading.
func (c Counts) Sub(before Counts) Counts {
	return Counts{c.RoundTrips - before.RoundTrips, c.Statements - before.Statements, c.Commits - before.Commits}
}

// Counter counts over every connection it dials. It implements lib/pq's
// Dialer and DialerContext; it is safe for concurrent use.
type Counter struct {
	roundTrips, statements, commits atomic.Int64
	inTransaction                   atomic.Int64
	dialer                          net.Dialer
}

// InTransaction is how many of the counted connections are inside a
// transaction block now, as the server last said (its ReadyForQuery
// status: in a transaction, or in a failed one); a connection that
// closes leaves the count.
func (c *Counter) InTransaction() int64 { return c.inTransaction.Load() }

// Counts returns the totals so far.
func (c *Counter) Counts() Counts {
	return Counts{c.roundTrips.Load(), c.statements.Load(), c.commits.Load()}
}

// Dial opens a counted connection.
func (c *Counter) Dial(network, address string) (net.Conn, error) {
	return c.DialContext(context.Background(), network, address)
}

// DialTimeout opens a counted connection within timeout.
func (c *Counter) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.DialContext(ctx, network, address)
}

// DialContext opens a counted connection.
func (c *Counter) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	conn, err := c.dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: conn, c: c, waiting: true}, nil
}

// backend follows the messages a server writes, for its ReadyForQuery
// status. Every one is typed (a type byte and a length), but for the
// one-byte answer to an SSL or GSS encryption request.
type backend struct {
	answers int    // one-byte answers to encryption requests still due
	header  []byte // the bytes of the current message's header read so far
	skip    int    // body bytes of the current message still to pass over
	ready   bool   // the current message is a ReadyForQuery
	inTx    bool   // the last ReadyForQuery said a transaction is open
}

// parse follows the message boundaries through p and reports a change of
// the transaction status: +1 into a transaction, -1 out of one.
func (b *backend) parse(p []byte) (change int) {
	for len(p) > 0 {
		if b.answers > 0 && len(b.header) == 0 && b.skip == 0 {
			b.answers--
			p = p[1:]
			continue
		}
		if b.skip > 0 {
			if b.ready {
				inTx := p[0] == 'T' || p[0] == 'E'
				if inTx != b.inTx {
					b.inTx = inTx
					change += map[bool]int{true: 1, false: -1}[inTx]
				}
				b.ready = false
			}
			n := min(b.skip, len(p))
			b.skip -= n
			p = p[n:]
			continue
		}
		n := min(5-len(b.header), len(p))
		b.header = append(b.header, p[:n]...)
		p = p[n:]
		if len(b.header) < 5 {
			return change
		}
		b.skip = int(binary.BigEndian.Uint32(b.header[1:5])) - 4
		b.ready = b.header[0] == 'Z' && b.skip == 1
		b.header = b.header[:0]
	}
	return change
}

// countedConn reads the frontend messages a client writes. Messages may
// span writes, so it keeps where it is in the current one.
type countedConn struct {
	net.Conn
	c *Counter

	server backend // what the server writes

	started bool   // the startup message (the one without a type byte) is past
	header  []byte // the bytes of the current message's header read so far
	skip    int    // body bytes of the current message still to pass over
	query   bool   // the current message is a simple Query
	text    []byte // a Query's text so far
	waiting bool   // the last operation was a read: the next write is a new round trip
}

// The protocol's SSL and GSS encryption requests: untyped like the startup
// message, but the startup message still follows them.
const (
	sslRequest    = 80877103
	gssencRequest = 80877104
)

func (w *countedConn) Read(p []byte) (int, error) {
	w.waiting = true
	n, err := w.Conn.Read(p)
	if change := w.server.parse(p[:n]); change != 0 {
		w.c.inTransaction.Add(int64(change))
	}
	return n, err
}

// Close leaves the count of connections in a transaction.
func (w *countedConn) Close() error {
	if w.server.inTx {
		w.server.inTx = false
		w.c.inTransaction.Add(-1)
	}
	return w.Conn.Close()
}

func (w *countedConn) Write(p []byte) (int, error) {
	if w.waiting {
		w.c.roundTrips.Add(1)
		w.waiting = false
	}
	w.parse(p)
	return w.Conn.Write(p)
}

// parse follows the message boundaries through p.
func (w *countedConn) parse(p []byte) {
	for len(p) > 0 {
		if w.skip > 0 {
			n := min(w.skip, len(p))
			if w.query {
				w.text = append(w.text, p[:n]...)
			}
			w.skip -= n
			p = p[n:]
			if w.skip == 0 && w.query {
				statements, commits := Statements(w.text)
				w.c.statements.Add(int64(statements))
				w.c.commits.Add(int64(commits))
			}
			continue
		}
		headerLen := 5 // type byte and length
		if !w.started {
			headerLen = 8 // length and protocol code
		}
		n := min(headerLen-len(w.header), len(p))
		w.header = append(w.header, p[:n]...)
		p = p[n:]
		if len(w.header) < headerLen {
			return
		}
		if !w.started {
			length := int(binary.BigEndian.Uint32(w.header[:4]))
			code := binary.BigEndian.Uint32(w.header[4:8])
			w.started = code != sslRequest && code != gssencRequest
			if !w.started {
				w.server.answers++
			}
			w.skip, w.query = length-8, false
		} else {
			typ := w.header[0]
			length := int(binary.BigEndian.Uint32(w.header[1:5]))
			w.skip, w.query, w.text = length-4, typ == 'Q', w.text[:0]
			if typ == 'E' {
				w.c.statements.Add(1)
			}
		}
		w.header = w.header[:0]
	}
}

// Statements counts the statements of a simple Query's text and how many
// of them are COMMITs. Semicolons inside quoted strings, quoted names,
// dollar-quoted bodies and comments do not separate statements.
func Statements(text []byte) (statements, commits int) {
	text = bytes.TrimRight(text, "\x00") // the message's terminator
	start := 0
	end := func(i int) {
		stmt := bytes.TrimSpace(text[start:i])
		if len(stmt) > 0 {
			statements++
			if len(stmt) >= 6 && bytes.EqualFold(stmt[:6], []byte("COMMIT")) && (len(stmt) == 6 || !isWordByte(stmt[6])) {
				commits++
			}
		}
		start = i + 1
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == ';':
			end(i)
		case c == '\'':
			escapes := i > 0 && (text[i-1] == 'E' || text[i-1] == 'e')
			for i++; i < len(text); i++ {
				if escapes && text[i] == '\\' {
					i++
				} else if text[i] == '\'' {
					if i+1 < len(text) && text[i+1] == '\'' {
						i++ // a doubled quote
						continue
					}
					break
				}
			}
		case c == '"':
			if j := bytes.IndexByte(text[i+1:], '"'); j >= 0 {
				i += j + 1
			} else {
				i = len(text)
			}
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			if j := bytes.IndexByte(text[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(text)
			}
		case c == '$':
			j := i + 1
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			if j < len(text) && text[j] == '$' && (j == i+1 || !isDigit(text[i+1])) {
				tag := text[i : j+1]
				if k := bytes.Index(text[j+1:], tag); k >= 0 {
					i = j + 1 + k + len(tag) - 1
				} else {
					i = len(text)
				}
			}
		}
	}
	end(len(text))
	return statements, commits
}

func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
