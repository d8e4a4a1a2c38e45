package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

// FormatVersion is the on-disk format this release writes: the key
// layout (keys.go) and the encodings of what is stored under it. A store
// carries the version that wrote it under FormatKey. A release refuses a
// store of a newer format, and reads an older one it knows: every branch
// that reads an older format names the version it serves, so it can be
// deleted when that version is no longer supported. A store without the
// key was made before versions were kept, or has not had a job started
// yet: it is format 1.
//
// Version history:
//
//	1  the layout drawn in keys.go (2026-11-28)
const FormatVersion = 1

// ErrNewerFormat: the store was written by a release with a newer on-disk
// format than this one reads.
var ErrNewerFormat = errors.New("the store was written in a newer format than this release reads")

// Format is what ReadFormat found.
type Format struct {
	// Version is the store's format version (1 when unrecorded).
	Version int
	// Recorded says the store carries its version; when false, the next
	// start of a job records it (RecordFormat).
	Recorded bool
}

// ReadFormat reads the store's format in a read-only transaction and
// fails with ErrNewerFormat when this release cannot read it.
func ReadFormat(ctx context.Context, s store.Store) (Format, error) {
	f := Format{Version: 1}
	err := s.View(ctx, func(tx store.ReadTx) error {
		v, err := tx.Get(FormatKey())
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return fmt.Errorf("the store's format %q is no version", v)
		}
		f = Format{Version: n, Recorded: true}
		return nil
	})
	if err != nil {
		return Format{}, fmt.Errorf("reading the store's format: %w", err)
	}
	if f.Version > FormatVersion {
		return f, fmt.Errorf("store format %d, this release reads formats up to %d (upgrade flowgen): %w", f.Version, FormatVersion, ErrNewerFormat)
	}
	return f, nil
}

// RecordFormat records FormatVersion in tx, on a store ReadFormat found
// unrecorded. It needs no answer; a store that has meanwhile been
// recorded with another version fails the transaction with
// store.ErrConflict.
func RecordFormat(tx store.Tx) error {
	return tx.PutOnce(FormatKey(), []byte(strconv.Itoa(FormatVersion)))
}
