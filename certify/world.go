package certify

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/connectorspec"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
	"github.com/flowgen-dev/flowgen/testharness/fixturetest"
)

// drawn is a run's world: values shaped like production's, drawn from
// one seed. It is safe for concurrent use.
type drawn struct {
	World
	// node is the flow node name keys are computed under, as an engine
	// computes them under the node's name in its flow.
	node string
	// secrets are the values each declared handle resolves to; subs
	// rewrite the fixtures' placeholders into them. timeSubs rewrite
	// fixturetest.Now, in the forms outputs write it, into Now in whole
	// seconds, for the checks that run in the drawn world.
	secrets  map[string]string
	subs     []substitution
	timeSubs []substitution
	// secretLooks are the secrets as canaries, worked out once
	// (secretCanaries).
	secretsOnce sync.Once
	secretLooks []canary
	// declared are the URL path segments the spec itself names (its
	// providerDedupe paths): public, so a secret URL keeps them where
	// it has them, and the provider's contract still matches its path.
	declared map[string]bool

	mu   sync.Mutex
	rng  *rand.Rand
	used map[string]bool
}

// drawSeed returns a seed from the operating system's random source.
func drawSeed() uint64 {
	var b [8]byte
	crand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// newDrawn draws a world for spec from seed, its clock within the 30 days
// after started (the run's start): a time production reaches too, so the
// clock tells a connector nothing.
func newDrawn(spec *connectorspec.Spec, m *httpfixture.Manifest, seed uint64, started time.Time) *drawn {
	d := &drawn{World: World{Seed: seed}, rng: rand.New(rand.NewPCG(seed, seed^0x636572746966790a)), secrets: map[string]string{}}
	// With nanoseconds, as a published activation's time has.
	d.Now = started.UTC().Add(time.Duration(d.rng.Int64N(int64(30 * 24 * time.Hour))))
	d.timeSubs = timeSubstitutions(fixturetest.Now, d.Now.Truncate(time.Second))
	d.node = d.word() + "-" + d.word()
	if spec.Idempotency != nil {
		for _, p := range spec.Idempotency.ProviderDedupe {
			for seg := range strings.SplitSeq(p.Path, "/") {
				if seg != "" && !strings.Contains(seg, "*") {
					if d.declared == nil {
						d.declared = map[string]bool{}
					}
					d.declared[seg] = true
				}
			}
		}
	}
	for _, s := range spec.Secrets {
		var v string
		if s.Format != nil || !m.HasSecret(s.Handle) {
			prefix, alphabet, length := s.Format.Shape()
			v = prefix + d.chars(alphabet.Chars(), length)
		} else {
			v = d.like(m.Secret(s.Handle), true)
		}
		d.secrets[s.Handle] = v
		d.subs = append(d.subs, substitution{old: m.Secret(s.Handle), new: v})
	}
	return d
}

// timeSubstitutions rewrite from, in the forms a connector commonly
// writes a time (RFC 3339, with a space, a date; Unix milliseconds and
// seconds), into to: longer forms first, so that a date is rewritten on
// its own only where it stands alone.
func timeSubstitutions(from, to time.Time) []substitution {
	var subs []substitution
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05", time.DateOnly} {
		subs = append(subs, substitution{old: from.UTC().Format(layout), new: to.UTC().Format(layout)})
	}
	return append(subs,
		substitution{old: strconv.FormatInt(from.UnixMilli(), 10), new: strconv.FormatInt(to.UnixMilli(), 10), number: true},
		substitution{old: strconv.FormatInt(from.Unix(), 10), new: strconv.FormatInt(to.Unix(), 10), number: true})
}

// word is a pronounceable lowercase word of 4 to 7 letters.
func (d *drawn) word() string {
	const consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 4 + d.rng.IntN(4)
	var b strings.Builder
	for i := range n {
		set := consonants
		if i%2 == 1 {
			set = vowels
		}
		b.WriteByte(set[d.rng.IntN(len(set))])
	}
	return b.String()
}

// chars draws n characters of alphabet.
func (d *drawn) chars(alphabet string, n int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[d.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// uintn draws a number below n.
func (d *drawn) uintn(n uint64) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Uint64N(n)
}

// digits draws a number of n digits, the first not 0 (unless n is 1).
func (d *drawn) digits(n int) string {
	if n <= 1 {
		return d.chars("0123456789", max(n, 1))
	}
	return d.chars("123456789", 1) + d.chars("0123456789", n-1)
}

// minDrawn is how many drawn characters a value shaped like another has
// at least, so that finding it anywhere is no coincidence.
const minDrawn = 16

// like returns a value of example's shape: every letter and digit
// redrawn in its class (upper, lower, digit), every other character
// kept. What names a place rather than a party is kept too: a URL's
// scheme and host and the path segments the spec names (declared), an
// address's domain (after the last '@'), and a
// token's leading lowercase words that end in '_' or '-' (sk_live_,
// xoxb-, cus_), the way providers prefix their keys and ids. When fewer
// than minDrawn characters were drawn and grow is set, drawn letters and
// digits are added at the end of the drawn part.
func (d *drawn) like(example string, grow bool) string {
	from, to := drawnPart(example)
	isURL := from > 0 && strings.Contains(example[:from], "://")
	const lower, upper, digits = "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"
	b := []byte(example[from:to])
	kept := make([]bool, len(b))
	if isURL && len(d.declared) > 0 {
		path := string(b)
		if end := strings.IndexAny(path, "?#"); end >= 0 {
			path = path[:end]
		}
		at := 0
		for seg := range strings.SplitSeq(path, "/") {
			if d.declared[seg] {
				for i := range len(seg) {
					kept[at+i] = true
				}
			}
			at += len(seg) + 1
		}
	}
	n := 0
	for i, ch := range b {
		if kept[i] {
			continue
		}
		switch {
		case ch >= 'a' && ch <= 'z':
			b[i] = d.chars(lower, 1)[0]
		case ch >= 'A' && ch <= 'Z':
			b[i] = d.chars(upper, 1)[0]
		case ch >= '0' && ch <= '9':
			b[i] = d.chars(digits, 1)[0]
		default:
			continue
		}
		n++
	}
	drawn := string(b)
	if grow && n < minDrawn {
		drawn += d.chars(lower+upper+digits, minDrawn-n)
	}
	return example[:from] + drawn + example[to:]
}

// unused is like(example, grow), drawn again (up to 16 times) until it
// is a value this world has not handed out before.
func (d *drawn) unused(example string, grow bool) string {
	var v string
	for range 16 {
		v = d.like(example, grow)
		d.mu.Lock()
		fresh := !d.used[v]
		if fresh {
			if d.used == nil {
				d.used = map[string]bool{}
			}
			d.used[v] = true
		}
		d.mu.Unlock()
		if fresh {
			break
		}
	}
	return v
}

// tokenPrefix is the length of example's leading lowercase words that
// each end in '_' or '-', at most two of them and never all of example.
func tokenPrefix(example string) int {
	end := 0
	for words := 0; words < 2; words++ {
		i := end
		for i < len(example) && example[i] >= 'a' && example[i] <= 'z' {
			i++
		}
		if i == end || i >= len(example)-1 || (example[i] != '_' && example[i] != '-') {
			break
		}
		end = i + 1
	}
	return end
}
