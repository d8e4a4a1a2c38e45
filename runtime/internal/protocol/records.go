package protocol

import (
	"encoding/json"
	"errors"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// GetJSON decodes the JSON value under key into v and reports whether
// there was one; an absent key leaves v as it was.
func GetJSON(tx store.ReadTx, key []byte, v any) (bool, error) {
	raw, err := tx.Get(key)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(raw, v)
}

// PutJSON puts v, as JSON, under key.
func PutJSON(tx store.Tx, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Put(key, raw)
}

// StartKeyRecord is what a job key (StartKey) names: the job its first
// start created.
type StartKeyRecord struct {
	Job  string `json:"job"`
	Flow string `json:"flow"`
}

// InlineLimit is the largest job input that travels inside a message
// and a job's meta; a larger one is stored once under BlobKey of its
// SHA-256, counted by the jobs that refer to it.
const InlineLimit = 64 << 10

// maxReferences bounds a blob's count of jobs.
const maxReferences = 1 << 40

// ReferenceBlob counts one more job whose input is the blob ref. It runs
// before the blob is written: on PostgreSQL the count's row lock orders it
// after a sweeper deleting the blob, whose delete it then sees.
func ReferenceBlob(tx store.Tx, ref string) error {
	return tx.Bump(BlobKey(ref), 1, maxReferences)
}

// UnreferenceBlob counts one job less whose input is the blob ref, and
// deletes the blob when none is left; it returns the blobs deleted.
// Blobs stored before they were counted have no count, and stay.
func UnreferenceBlob(tx store.Tx, ref string) (int, error) {
	n, err := tx.Counter(BlobKey(ref))
	if err != nil || n == 0 {
		return 0, err
	}
	if n, err = tx.Add(BlobKey(ref), -1, maxReferences); err != nil || n > 0 {
		return 0, err
	}
	if _, err := tx.DeletePrefix(BlobKey(ref), 2); err != nil { // its value and its count
		return 0, err
	}
	return 1, nil
}

// LockRow makes the transactions that call it with key run one after
// another from that call on: it adds to the counter under key (which, on
// PostgreSQL, takes the counter's row until the commit; bbolt has one
// writer anyway) and takes the addition back in the same commit, so the
// counter stays 0. A record read after it reflects every earlier holder's
// commit.
func LockRow(tx store.Tx, key []byte) error {
	if _, err := tx.Add(key, 1, 1); err != nil {
		return err
	}
	return tx.Bump(key, -1, 1)
}
