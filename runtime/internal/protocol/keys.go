// Package protocol owns what the step protocol writes to a store: the
// key layout every durable write goes under, the expiry entries the
// sweeper reads, and the on-disk format version (format.go), so that a
// compatibility branch names the version it serves.
package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// Key layout. Every key the engine writes comes from one function below;
// TestKeyLayout keeps this drawing equal to what they return. Everything
// about a job lives under its root prefix, so one prefix scan shows the
// whole job:
//
//	pid/<root>/meta               job meta (flow, input, start time)      value
//	pid/<root>/status             final status and result (none while     value
//	                              running: readStatus)
//	pid/<root>/tomb               tombstone (kill)                        value
//	pid/<root>/paused             pause flag                              value
//	pid/<root>/sem                job semaphore                           counter
//	pid/<root>/spent              activations charged to the budget       counter
//	pid/<root>/res/<act>          write-once activation result            value
//	pid/<root>/fail/<act>         activation failed (the job fails)       value
//	pid/<root>/term/<act>         activation had no successors            value
//	pid/<root>/log/<act>/<n>      aspect step log of retried attempt n    value
//	pid/<root>/wait/<act>         parked activation (checkpoint, subflow) value
//	pid/<root>/unserved/<act>     waits for a worker with its flow        value
//	pid/<root>/hist/<t>/<ev>/<act> history event at time t (ns.seq; a   value
//	                              job's own events have no /<act>; an
//	                              activation's outcome is its res/<act>)
//	pid/<root>/signal/<act>       decision recorded for a checkpoint      value
//	pid/<root>/act/<act>          activity ledger                         counter
//	pid/<root>/guid/<msg>         GUID ledger of one message              counter
//	pid/<root>/agg/<act>          finished elements (or shards), forEach  counter
//	pid/<root>/agg/<act>/<shard>  finished elements of one shard          counter
//	pid/<root>/items/<act>        elements a windowed forEach still owes  value
//	pid/<root>/sub/<act>          child job a subflow activation started  value
//	pid/<root>/child/<act>        final status of that child job          value
//	pid/<root>/seq                completion sequence                     counter
//	pid/<root>/done/<seq>         compensable activations, in order       value
//	pid/<root>/comp               compensation started (chain length)     value
//	pid/<root>/comp/<i>           the compensation chain, newest first    value
//	pid/<root>/halt               compensation halted at step <i>         value
//	jobs/<inverted-root>          job index entry, newest first           value
//	start/<key>                   the job a caller's job key started      value
//	dlq/<msg>                     what an operator did with a dead letter value
//	sched/<name>                  a schedule's last tick and buffer       value
//	rate/<connector>              a connector's token bucket              value
//	cache/<key>                   a cached connector output               value
//	jobs.indexed                  the job index covers older jobs         value
//	format                        the store's format version (format.go)  value
//	blobs/<sha256>                an input too large to travel inline     value
//	blobs/<sha256>                jobs whose input the blob is            counter
//	exp/<ns>/<key>                <key> may go from Unix time <ns>        value
//	dedupe/edge/<key>             exactly-once edge record                value
//	dedupe/<key>                  dedupe capability record (legacy, read) value
//	cdedupe/<namespace>/<key>     dedupe capability record                value
//	kv/<namespace>/<key>          KV capability value                     value
//
// Activation ids longer than 64 bytes are hashed (SHA-256, first 16 bytes,
// base64url) so keys stay bounded whatever users name things. Numbers in
// keys that are scanned in order (<seq>, <i>) are zero-padded to 12 digits,
// so byte order is numeric order.

// MetaKey is the key drawn as pid/<root>/meta.
func MetaKey(j runtype.JobID) []byte { return JobKey(j, "meta") }

// StatusKey is the key drawn as pid/<root>/status.
func StatusKey(j runtype.JobID) []byte { return JobKey(j, "status") }

// TombKey is the key drawn as pid/<root>/tomb.
func TombKey(j runtype.JobID) []byte { return JobKey(j, "tomb") }

// PausedKey is the key drawn as pid/<root>/paused.
func PausedKey(j runtype.JobID) []byte { return JobKey(j, "paused") }

// SemKey is the key drawn as pid/<root>/sem.
func SemKey(j runtype.JobID) []byte { return JobKey(j, "sem") }

// SpentKey is the key drawn as pid/<root>/spent.
func SpentKey(j runtype.JobID) []byte { return JobKey(j, "spent") }

// ResultKey is the key drawn as pid/<root>/res/<act>.
func ResultKey(j runtype.JobID, act string) []byte { return JobKey(j, "res", act) }

// FailKey is the key drawn as pid/<root>/fail/<act>.
func FailKey(j runtype.JobID, act string) []byte { return JobKey(j, "fail", act) }

// TermKey is the key drawn as pid/<root>/term/<act>.
func TermKey(j runtype.JobID, act string) []byte { return JobKey(j, "term", act) }

// HistoryKey is the key drawn as pid/<root>/hist/<t>/<ev>/<act>.
func HistoryKey(j runtype.JobID, at time.Time, seq uint64, ev runtype.EventKind, act string) []byte {
	t := HistoryPlace(at, seq)
	if act == "" {
		return JobKey(j, "hist", t, string(ev))
	}
	return JobKey(j, "hist", t, string(ev), act)
}

// HistoryPlace is where an event at at, the seq-th its process recorded,
// sorts in its job's history: "<time>.<seq>", zero-padded, so byte order
// is time order.
func HistoryPlace(at time.Time, seq uint64) string {
	return fmt.Sprintf("%020d.%06d", at.UnixNano(), seq)
}

// UnservedKey is the key drawn as pid/<root>/unserved/<act>.
func UnservedKey(j runtype.JobID, act string) []byte {
	return JobKey(j, "unserved", act)
}

// AttemptLogKey is the key drawn as pid/<root>/log/<act>/<n>.
func AttemptLogKey(j runtype.JobID, act string, attempt int) []byte {
	return JobKey(j, "log", act, strconv.Itoa(attempt))
}

// WaitKey is the key drawn as pid/<root>/wait/<act>.
func WaitKey(j runtype.JobID, act string) []byte { return JobKey(j, "wait", act) }

// SignalKey is the key drawn as pid/<root>/signal/<act>.
func SignalKey(j runtype.JobID, act string) []byte { return JobKey(j, "signal", act) }

// ActivityKey is the key drawn as pid/<root>/act/<act>.
func ActivityKey(j runtype.JobID, act string) []byte { return JobKey(j, "act", act) }

// GuidKey is the key drawn as pid/<root>/guid/<msg>.
func GuidKey(j runtype.JobID, msg [16]byte) []byte {
	return JobKey(j, "guid", hex.EncodeToString(msg[:]))
}

// AggregateKey is the key drawn as pid/<root>/agg/<act>.
func AggregateKey(j runtype.JobID, forEach string) []byte { return JobKey(j, "agg", forEach) }

// AggregateShardKey is the key drawn as pid/<root>/agg/<act>/<shard>.
func AggregateShardKey(j runtype.JobID, forEach string, shard int) []byte {
	return JobKey(j, "agg", forEach, padded(int64(shard)))
}

// ItemsKey is the key drawn as pid/<root>/items/<act>.
func ItemsKey(j runtype.JobID, forEach string) []byte { return JobKey(j, "items", forEach) }

// SubflowChildKey is the key drawn as pid/<root>/sub/<act>.
func SubflowChildKey(j runtype.JobID, act string) []byte { return JobKey(j, "sub", act) }

// SubflowStatusKey is the key drawn as pid/<root>/child/<act>.
func SubflowStatusKey(j runtype.JobID, act string) []byte { return JobKey(j, "child", act) }

// CompletionSeqKey is the key drawn as pid/<root>/seq.
func CompletionSeqKey(j runtype.JobID) []byte { return JobKey(j, "seq") }

// CompensableKey is the key drawn as pid/<root>/done/<seq>.
func CompensableKey(j runtype.JobID, seq int64) []byte { return JobKey(j, "done", padded(seq)) }

// CompensationKey is the key drawn as pid/<root>/comp.
func CompensationKey(j runtype.JobID) []byte { return JobKey(j, "comp") }

// CompensationStepKey is the key drawn as pid/<root>/comp/<i>.
func CompensationStepKey(j runtype.JobID, i int) []byte { return JobKey(j, "comp", padded(int64(i))) }

// CompensationHaltKey is the key drawn as pid/<root>/halt.
func CompensationHaltKey(j runtype.JobID) []byte { return JobKey(j, "halt") }

// BlobKey is the key drawn as blobs/<sha256>.
func BlobKey(ref string) []byte { return []byte("blobs/" + ref) }

// StartKey is the key drawn as start/<key>.
func StartKey(key string) []byte { return []byte("start/" + Segment(key)) }

// DeadLetterKey is the key drawn as dlq/<msg>.
func DeadLetterKey(msg [16]byte) []byte { return []byte("dlq/" + hex.EncodeToString(msg[:])) }

// ScheduleKey is the key drawn as sched/<name>.
func ScheduleKey(name string) []byte { return []byte("sched/" + Segment(name)) }

// RateKey is the key drawn as rate/<connector>.
func RateKey(connector string) []byte { return []byte("rate/" + Segment(connector)) }

// CacheEntryKey is the key drawn as cache/<key>.
func CacheEntryKey(key string) []byte { return []byte("cache/" + key) }

// EdgeDedupeKey is the key drawn as dedupe/edge/<key>.
func EdgeDedupeKey(key string) []byte { return []byte("dedupe/edge/" + key) }

// CapabilityDedupeKey is where the dedupe capability records a
// connector namespace's key.
func CapabilityDedupeKey(namespace, key string) []byte {
	return []byte("cdedupe/" + namespace + "/" + key)
}

// LegacyCapabilityDedupeKey is where releases before namespaces recorded
// a dedupe capability key, read until such records expire; nil for keys
// that would name the engine's own edge records.
func LegacyCapabilityDedupeKey(key string) []byte {
	if strings.HasPrefix(key, "edge/") {
		return nil
	}
	return []byte("dedupe/" + key)
}

// KVKey is where the kv capability of namespace stores key.
func KVKey(namespace, key string) []byte { return []byte("kv/" + namespace + "/" + key) }

// ExpiryKey is the expiry entry that lets the sweeper delete key from at.
func ExpiryKey(at time.Time, key []byte) []byte {
	k := make([]byte, 0, len(ExpiryPrefix)+21+len(key))
	k = append(k, ExpiryPrefix...)
	k = append(k, fmt.Sprintf("%020d/", max(at.UnixNano(), 0))...)
	return append(k, key...)
}

// JobPrefix is the prefix of a job's keys of one kind (JobKey of kind and a slash).
func JobPrefix(j runtype.JobID, kind string) []byte { return append(JobKey(j, kind), '/') }

// RootPrefix is the prefix of every key of job j: "pid/<root>/".
func RootPrefix(j runtype.JobID) []byte { return appendRoot(nil, j) }

// appendRoot appends "pid/<root>/" (the root as JobID.String spells it)
// to dst.
func appendRoot(dst []byte, j runtype.JobID) []byte {
	dst = append(dst, "pid/"...)
	dst = base64.RawURLEncoding.AppendEncode(dst, j[:])
	return append(dst, '/')
}

// AllRootsPrefix is the prefix of every job's keys.
func AllRootsPrefix() []byte { return []byte("pid/") }

// JobIndexKey is the key drawn as jobs/<inverted-root>.
func JobIndexKey(j runtype.JobID) []byte {
	return []byte(JobIndexPrefix + hex.EncodeToString(Inverted(j)))
}

// JobIndexBuiltKey is the key drawn as jobs.indexed.
func JobIndexBuiltKey() []byte { return []byte("jobs.indexed") }

// FormatKey is the key drawn as format.
func FormatKey() []byte { return []byte("format") }

func padded(n int64) string { return fmt.Sprintf("%012d", n) }

// JobIndexPrefix starts every job index key.
const JobIndexPrefix = "jobs/"

// Inverted is j with every bit flipped: ascending order of inverted
// UUIDv7s is newest first.
func Inverted(j runtype.JobID) []byte {
	inv := make([]byte, len(j))
	for i, b := range j {
		inv[i] = ^b
	}
	return inv
}

// JobKey is pid/<root>/ followed by parts joined with slashes, each a
// Segment.
func JobKey(j runtype.JobID, parts ...string) []byte {
	n := len("pid/") + base64.RawURLEncoding.EncodedLen(len(j)) + 1
	for _, p := range parts {
		n += len(p) + 1 // a hashed segment is shorter than 64 bytes
	}
	k := appendRoot(make([]byte, 0, n+1), j) // +1: room for JobPrefix's slash
	for i, p := range parts {
		if i > 0 {
			k = append(k, '/')
		}
		k = append(k, Segment(p)...)
	}
	return k
}

// Segment hashes long or slash-containing key segments.
func Segment(s string) string {
	if len(s) <= 64 && !strings.ContainsRune(s, '/') {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h:" + base64.RawURLEncoding.EncodeToString(sum[:16])
}

// MessageID derives a message's id from its job and activation, so that
// publishing the same activation twice is one message. It starts with the
// job id's first 8 bytes (a UUIDv7's creation time, in milliseconds, and
// 12 random bits), so the messages of jobs started together sit together
// in a store's id order: a commit that touches the messages of the jobs in
// flight writes a few pages of the message index, not one page per
// message. The rest is 64 bits of a hash of job and activation.
func MessageID(j runtype.JobID, act string) [16]byte {
	sum := sha256.Sum256(append(j[:], act...))
	var id [16]byte
	copy(id[:8], j[:8])
	copy(id[8:], sum[:8])
	return id
}
