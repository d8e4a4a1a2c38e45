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

func (t *tx) leaseRecord(job []byte) (leaseRecord, bool, error) {
	raw := t.get(bucketLeases, job)
	if raw == nil {
		return leaseRecord{}, false, nil
	}
	var l leaseRecord
	if err := cbor.Unmarshal(raw, &l); err != nil {
		return l, false, fmt.Errorf("decode lease of %x: %w", job, err)
	}
	return l, true, nil
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
	raw, err := cbor.Marshal(l)
	if err != nil {
		return store.Lease{}, err
	}
	if err := t.b(bucketLeases).Put(job, raw); err != nil {
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
	raw, err := cbor.Marshal(leaseRecord{Owner: want.Owner, Token: want.Token})
	if err != nil {
		return err
	}
	return t.b(bucketLeases).Put(want.Job, raw)
}

func (t *tx) DeleteLease(job []byte) error { return t.b(bucketLeases).Delete(job) }
