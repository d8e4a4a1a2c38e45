// Package pgwire counts what a PostgreSQL client asks of the server, from
// the frontend protocol it writes on the wire: round trips, statements and
// commits. Benchmarks wrap a store's connections with a Counter to report
// the cost of the step protocol per activation, whatever the driver does
// inside (prepared or not, pipelined or not).
//
// A round trip is a write after a read: the client sent something and
// waits for the answer before it sends again. A statement is an Execute
// message of the extended protocol or a simple Query message (BEGIN and
// COMMIT included); a commit is a simple Query that starts with COMMIT.
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
	dialer                          net.Dialer
}

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

// countedConn reads the frontend messages a client writes. Messages may
// span writes, so it keeps where it is in the current one.
type countedConn struct {
	net.Conn
	c *Counter

	started bool   // the startup message (the one without a type byte) is past
	header  []byte // the bytes of the current message's header read so far
	skip    int    // body bytes of the current message still to pass over
	query   bool   // the current message is a simple Query
	head    []byte // a Query's first bytes, to tell a COMMIT
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
	return w.Conn.Read(p)
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
			if w.query && len(w.head) < len("COMMIT") {
				w.head = append(w.head, p[:min(n, len("COMMIT")-len(w.head))]...)
				if len(w.head) == len("COMMIT") && bytes.EqualFold(w.head, []byte("COMMIT")) {
					w.c.commits.Add(1)
				}
			}
			w.skip -= n
			p = p[n:]
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
			w.skip, w.query = length-8, false
		} else {
			typ := w.header[0]
			length := int(binary.BigEndian.Uint32(w.header[1:5]))
			w.skip, w.query, w.head = length-4, typ == 'Q', w.head[:0]
			if typ == 'Q' || typ == 'E' {
				w.c.statements.Add(1)
			}
		}
		w.header = w.header[:0]
	}
}
