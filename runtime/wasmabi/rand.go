package wasmabi

import "math/rand/v2"

// The Go runtime of a module keeps, per thread, a ChaCha8 generator (a
// buffer of RandBuffer words drawn ahead and the RandKey words of its
// next key) and a cheap xorshift generator of one word. A RunRequest
// carries all of them, in that order.
const (
	RandBuffer = 32
	RandKey    = 4
	RandWords  = RandBuffer + RandKey + 1
)

// RandState is the random state of a module's call whose seed is seed:
// every word drawn in order from ChaCha8(seed), the cheap generator's
// made odd (xorshift must not start at zero).
func RandState(seed [32]byte) [RandWords]uint64 {
	g := rand.NewChaCha8(seed)
	var s [RandWords]uint64
	for i := range s {
		s[i] = g.Uint64()
	}
	s[RandWords-1] |= 1
	return s
}
