package runtime

import (
	"crypto/sha256"
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

// Key layout. Everything about a job lives under its root prefix, so one
// prefix scan shows the whole job:
//
//	pid/<root>/meta               job meta (flow, input, start time)      value
//	pid/<root>/status             job status and result                   value
//	pid/<root>/tomb               tombstone (kill)                        value
//	pid/<root>/res/<act>          write-once activation result            value
//	pid/<root>/fail/<act>         activation failed (the job fails)       value
//	pid/<root>/term/<act>         activation had no successors            value
//	pid/<root>/log/<act>/<n>      aspect step log of retried attempt n    value
//	pid/<root>/wait/<act>         parked checkpoint activation            value
//	pid/<root>/signal/<act>       decision recorded for a checkpoint      value
//	pid/<root>/paused             pause flag                              value
//	pid/<root>/sem                job semaphore                           counter
//	pid/<root>/act/<act>          activity ledger                         counter
//	pid/<root>/guid/<msg>         GUID ledger of one message              counter
//	pid/<root>/agg/<act>          finished children of a forEach          counter
//
// Activation ids longer than 64 bytes are hashed (SHA-256, first 16 bytes,
// base64url) so keys stay bounded whatever users name things.
func rootPrefix(j JobID) []byte { return []byte("pid/" + j.String() + "/") }

func jobKey(j JobID, parts ...string) []byte {
	k := rootPrefix(j)
	for i, p := range parts {
		if i > 0 {
			k = append(k, '/')
		}
		k = append(k, segment(p)...)
	}
	return k
}

// jobPrefix is the prefix of every key of one kind ("res", "term") of a job.
func jobPrefix(j JobID, kind string) []byte { return append(jobKey(j, kind), '/') }

// segment hashes long or slash-containing key segments.
func segment(s string) string {
	if len(s) <= 64 && !containsSlash(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h:" + base64.RawURLEncoding.EncodeToString(sum[:16])
}

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// messageID derives a message's id from its job and activation, so that
// publishing the same activation twice is one message.
func messageID(j JobID, act string) [16]byte {
	sum := sha256.Sum256(append(j[:], act...))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}
