package boltstore

import (
	"bytes"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/flowgen-dev/flowgen/runtime/store"
)

type leaseRecord struct {
	Owner   string `cbor:"1,keyasint"`
	Token   uint64 `cbor:"2,keyasint"`
	Expires int64  `cbor:"3,keyasint"` // unix nanoseconds; 0 once released
}

// knownLease is a job's lease row as a transaction last read or wrote it
// (ok is false when there is none).
type knownLease struct {
	job string
	rec leaseRecord
	ok  bool
}

// leaseRecord is job's lease row. A step reads its job's lease several
// times in one transaction (to take it, to fence each step it commits, to
// enter the next chained step), so the transaction reads and decodes the
// row once and keeps it, current through its own writes (putLease,
// DeleteLease).
func (t *tx) leaseRecord(job []byte) (leaseRecord, bool, error) {
	for _, k := range t.leases {
		if k.job == string(job) {
			return k.rec, k.ok, nil
		}
	}
	var l leaseRecord
	raw := t.get(bucketLeases, job)
	if raw != nil {
		if err := cbor.Unmarshal(raw, &l); err != nil {
			return l, false, fmt.Errorf("decode lease of %x: %w", job, err)
		}
	}
	t.knowLease(job, l, raw != nil)
	return l, raw != nil, nil
}

// knowLease records job's lease row as rec (none unless ok).
func (t *tx) knowLease(job []byte, rec leaseRecord, ok bool) {
	for i := range t.leases {
		if t.leases[i].job == string(job) {
			t.leases[i].rec, t.leases[i].ok = rec, ok
			return
		}
	}
	t.leases = append(t.leases, knownLease{string(job), rec, ok})
}

// putLease writes job's lease row.
func (t *tx) putLease(job []byte, l leaseRecord) error {
	raw, err := cbor.Marshal(l)
	if err != nil {
		return err
	}
	if err := t.b(bucketLeases).Put(job, raw); err != nil {
		return err
	}
	t.knowLease(job, l, true)
	return nil
}

func (t *tx) Lease(job []byte) (store.Lease, error) {
	l, ok, err := t.leaseRecord(job)
	if err != nil {
		return store.Lease{}, err
	}
	if !ok {
		return store.Lease{}, fmt.Errorf("lease of %x: %w", job, store.ErrNotFound)
	}
	return store.Lease{Job: bytes.Clone(job), Owner: l.Owner, Token: l.Token, Expires: time.Unix(0, l.Expires)}, nil
}

func (t *tx) AcquireLease(job []byte, owner string, ttl time.Duration) (store.Lease, error) {
	l, _, err := t.leaseRecord(job)
	if err != nil {
		return store.Lease{}, err
	}
	live := l.Expires > t.now.UnixNano()
	switch {
	case live && l.Owner != owner:
		return store.Lease{}, fmt.Errorf("lease of %x held by %s: %w", job, l.Owner, store.ErrLeaseHeld)
	case !live || l.Owner != owner:
		l.Token++ // a new tenure fences every earlier one
		l.Owner = owner
	}
	l.Expires = t.now.Add(ttl).UnixNano()
	if err := t.putLease(job, l); err != nil {
		return store.Lease{}, err
	}
	return store.Lease{Job: bytes.Clone(job), Owner: owner, Token: l.Token, Expires: time.Unix(0, l.Expires)}, nil
}

func (t *tx) Fence(want store.Lease) error {
	l, ok, err := t.leaseRecord(want.Job)
	if err != nil {
		return err
	}
	if !ok || l.Token != want.Token || l.Owner != want.Owner || l.Expires <= t.now.UnixNano() {
		return fmt.Errorf("lease %d of %x for %s: %w", want.Token, want.Job, want.Owner, store.ErrFenced)
	}
	return nil
}

func (t *tx) ReleaseLease(want store.Lease) error {
	if err := t.Fence(want); err != nil {
		return nil // already superseded: nothing to release
	}
	return t.putLease(want.Job, leaseRecord{Owner: want.Owner, Token: want.Token})
}

func (t *tx) DeleteLease(job []byte) error {
	if err := t.b(bucketLeases).Delete(job); err != nil {
		return err
	}
	t.knowLease(job, leaseRecord{}, false)
	return nil
}
