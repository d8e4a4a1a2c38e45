package runtype

import (
	"encoding/base64"
	"fmt"

	"github.com/google/uuid"
)

// JobID is a job's root id: a UUIDv7, so ids sort by creation time.
type JobID [16]byte

// NewJobID returns a fresh UUIDv7 job id.
func NewJobID() (JobID, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return JobID{}, fmt.Errorf("new job id: %w", err)
	}
	return JobID(u), nil
}

// ParseJobID parses the base64url form String prints.
func ParseJobID(s string) (JobID, error) {
	var id JobID
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("invalid job id %q: want 22 base64url characters", s)
	}
	copy(id[:], b)
	return id, nil
}

// String is the id in base64url, the form used outside the store.
func (j JobID) String() string { return base64.RawURLEncoding.EncodeToString(j[:]) }
