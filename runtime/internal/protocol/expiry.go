package protocol

import (
	"fmt"
	"strconv"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// ExpiryPrefix starts every expiry entry.
const ExpiryPrefix = "exp/"

// ParseExpiry splits an expiry entry's key into its time and target.
func ParseExpiry(k []byte) (time.Time, []byte, error) {
	rest := k[len(ExpiryPrefix):]
	if len(rest) < 21 || rest[20] != '/' {
		return time.Time{}, nil, fmt.Errorf("expiry entry %q: malformed", k)
	}
	ns, err := strconv.ParseInt(string(rest[:20]), 10, 64)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("expiry entry %q: %w", k, err)
	}
	return time.Unix(0, ns), rest[21:], nil
}

// ExpireAt lets the sweeper delete the value under key from at on, in
// tx, for a record whose value says when it expires (the dedupe
// capability's: 8 bytes, Unix nanoseconds, big-endian).
func ExpireAt(tx store.Tx, key []byte, at time.Time) error {
	return tx.Put(ExpiryKey(at, key), []byte("record"))
}

// JobExpiry is the expiry entry that lets the sweeper delete a job that
// finished at finished after retention; nil when retention is not
// positive (the job is kept for good). Its value is "job".
func JobExpiry(job runtype.JobID, finished time.Time, retention time.Duration) []byte {
	if retention <= 0 {
		return nil
	}
	return ExpiryKey(finished.Add(retention), RootPrefix(job))
}
