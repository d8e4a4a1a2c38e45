package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/lib/pq"
)

// Notify uses LISTEN: one connection per call,
// reconnected by lib/pq after a server restart (a reconnect also wakes the
// listener, since notifications may have been missed meanwhile).
func (s *Store) Notify(ctx context.Context, stream string) (<-chan struct{}, error) {
	if s.url == "" {
		return nil, errors.New("notifications need a store opened with Open (a connection string)")
	}
	var l *pq.Listener
	if s.opts.Dialer != nil {
		l = pq.NewDialListener(s.opts.Dialer, s.url, 100*time.Millisecond, 5*time.Second, nil)
	} else {
		l = pq.NewListener(s.url, 100*time.Millisecond, 5*time.Second, nil)
	}
	if err := l.Listen(notifyChannel); err != nil {
		l.Close()
		return nil, err
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer l.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-l.Notify:
				// nil after a reconnect: wake anyway; else only for stream.
				if n != nil && n.Extra != stream {
					continue
				}
				select {
				case out <- struct{}{}:
				default: // a wake-up is already pending
				}
			case <-time.After(time.Minute):
				go l.Ping()
			}
		}
	}()
	return out, nil
}
