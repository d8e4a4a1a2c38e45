package engine

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

func metaKey(j runtype.JobID) []byte   { return jobKey(j, "meta") }
func statusKey(j runtype.JobID) []byte { return jobKey(j, "status") }
func tombKey(j runtype.JobID) []byte   { return jobKey(j, "tomb") }
func pausedKey(j runtype.JobID) []byte { return jobKey(j, "paused") }
func semKey(j runtype.JobID) []byte    { return jobKey(j, "sem") }
func spentKey(j runtype.JobID) []byte  { return jobKey(j, "spent") }

func resultKey(j runtype.JobID, act string) []byte { return jobKey(j, "res", act) }
func failKey(j runtype.JobID, act string) []byte   { return jobKey(j, "fail", act) }
func termKey(j runtype.JobID, act string) []byte   { return jobKey(j, "term", act) }
func historyKey(j runtype.JobID, at time.Time, seq uint64, ev runtype.EventKind, act string) []byte {
	t := historyPlace(at, seq)
	if act == "" {
		return jobKey(j, "hist", t, string(ev))
	}
	return jobKey(j, "hist", t, string(ev), act)
}

// historyPlace is where an event at at, the seq-th its process recorded,
// sorts in its job's history: "<time>.<seq>", zero-padded, so byte order
// is time order.
func historyPlace(at time.Time, seq uint64) string {
	return fmt.Sprintf("%020d.%06d", at.UnixNano(), seq)
}
func unservedKey(j runtype.JobID, act string) []byte {
	return jobKey(j, "unserved", act)
}
func attemptLogKey(j runtype.JobID, act string, attempt int) []byte {
	return jobKey(j, "log", act, strconv.Itoa(attempt))
}
func waitKey(j runtype.JobID, act string) []byte     { return jobKey(j, "wait", act) }
func signalKey(j runtype.JobID, act string) []byte   { return jobKey(j, "signal", act) }
func activityKey(j runtype.JobID, act string) []byte { return jobKey(j, "act", act) }
func guidKey(j runtype.JobID, msg [16]byte) []byte {
	return jobKey(j, "guid", hex.EncodeToString(msg[:]))
}
func aggregateKey(j runtype.JobID, forEach string) []byte { return jobKey(j, "agg", forEach) }
func aggregateShardKey(j runtype.JobID, forEach string, shard int) []byte {
	return jobKey(j, "agg", forEach, padded(int64(shard)))
}
func itemsKey(j runtype.JobID, forEach string) []byte     { return jobKey(j, "items", forEach) }
func subflowChildKey(j runtype.JobID, act string) []byte  { return jobKey(j, "sub", act) }
func subflowStatusKey(j runtype.JobID, act string) []byte { return jobKey(j, "child", act) }
func completionSeqKey(j runtype.JobID) []byte             { return jobKey(j, "seq") }
func compensableKey(j runtype.JobID, seq int64) []byte    { return jobKey(j, "done", padded(seq)) }
func compensationKey(j runtype.JobID) []byte              { return jobKey(j, "comp") }
func compensationStepKey(j runtype.JobID, i int) []byte   { return jobKey(j, "comp", padded(int64(i))) }
func compensationHaltKey(j runtype.JobID) []byte          { return jobKey(j, "halt") }
func blobKey(ref string) []byte                           { return []byte("blobs/" + ref) }
func startKey(key string) []byte                          { return []byte("start/" + segment(key)) }
func deadLetterKey(msg [16]byte) []byte                   { return []byte("dlq/" + hex.EncodeToString(msg[:])) }
func scheduleKey(name string) []byte                      { return []byte("sched/" + segment(name)) }
func rateKey(connector string) []byte                     { return []byte("rate/" + segment(connector)) }
func cacheEntryKey(key string) []byte                     { return []byte("cache/" + key) }
func edgeDedupeKey(key string) []byte                     { return []byte("dedupe/edge/" + key) }

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

// expiryKey is the expiry entry that lets the sweeper delete key from at.
func expiryKey(at time.Time, key []byte) []byte {
	k := make([]byte, 0, len(expiryPrefix)+21+len(key))
	k = append(k, expiryPrefix...)
	k = append(k, fmt.Sprintf("%020d/", max(at.UnixNano(), 0))...)
	return append(k, key...)
}

func jobPrefix(j runtype.JobID, kind string) []byte { return append(jobKey(j, kind), '/') }
func rootPrefix(j runtype.JobID) []byte             { return appendRoot(nil, j) }

// appendRoot appends "pid/<root>/" (the root as JobID.String spells it)
// to dst.
func appendRoot(dst []byte, j runtype.JobID) []byte {
	dst = append(dst, "pid/"...)
	dst = base64.RawURLEncoding.AppendEncode(dst, j[:])
	return append(dst, '/')
}
func allRootsPrefix() []byte { return []byte("pid/") }
func jobIndexKey(j runtype.JobID) []byte {
	return []byte(jobIndexPrefix + hex.EncodeToString(inverted(j)))
}
func jobIndexBuiltKey() []byte { return []byte("jobs.indexed") }
func padded(n int64) string    { return fmt.Sprintf("%012d", n) }

// jobIndexPrefix starts every job index key.
const jobIndexPrefix = "jobs/"

// inverted is j with every bit flipped: ascending order of inverted
// UUIDv7s is newest first.
func inverted(j runtype.JobID) []byte {
	inv := make([]byte, len(j))
	for i, b := range j {
		inv[i] = ^b
	}
	return inv
}

func jobKey(j runtype.JobID, parts ...string) []byte {
	n := len("pid/") + base64.RawURLEncoding.EncodedLen(len(j)) + 1
	for _, p := range parts {
		n += len(p) + 1 // a hashed segment is shorter than 64 bytes
	}
	k := appendRoot(make([]byte, 0, n+1), j) // +1: room for jobPrefix's slash
	for i, p := range parts {
		if i > 0 {
			k = append(k, '/')
		}
		k = append(k, segment(p)...)
	}
	return k
}

// segment hashes long or slash-containing key segments.
func segment(s string) string {
	if len(s) <= 64 && !strings.ContainsRune(s, '/') {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h:" + base64.RawURLEncoding.EncodeToString(sum[:16])
}

// messageID derives a message's id from its job and activation, so that
// publishing the same activation twice is one message. It starts with the
// job id's first 8 bytes (a UUIDv7's creation time, in milliseconds, and
// 12 random bits), so the messages of jobs started together sit together
// in a store's id order: a commit that touches the messages of the jobs in
// flight writes a few pages of the message index, not one page per
// message. The rest is 64 bits of a hash of job and activation.
func messageID(j runtype.JobID, act string) [16]byte {
	sum := sha256.Sum256(append(j[:], act...))
	var id [16]byte
	copy(id[:8], j[:8])
	copy(id[8:], sum[:8])
	return id
}
