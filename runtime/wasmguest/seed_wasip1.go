//go:build wasip1

package wasmguest

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// The Go runtime draws the randomness behind map iteration order, select
// and math/rand/v2's global functions from a ChaCha8 state of its own
// thread (runtime.m.chacha8, then m.cheaprand), seeded once when the
// instance starts and never again. A pooled instance would therefore
// iterate maps in an order that depends on every activation it ran
// before. reseed overwrites that state for each activation; the state's
// place in memory is found once, by watching which bytes of the thread
// one draw changes, rather than from a layout written down here, so that
// a change of toolchain fails loudly (Serve panics at instantiation)
// instead of silently reseeding the wrong bytes.

//go:linkname getm runtime.getm
func getm() uintptr

//go:linkname runtimeRand runtime.rand
func runtimeRand() uint64

//go:linkname cheaprand runtime.cheaprand
func cheaprand() uint32

// The layout of internal/chacha8rand.State: buf [32]uint64, seed
// [4]uint64, then i, n and c (uint32), padded to 8 bytes; m.cheaprand
// follows it.
const (
	stateBuf   = 0
	stateSeed  = 256
	stateI     = 288
	stateN     = 292
	stateC     = 296
	stateSize  = 304
	chunk      = wasmabi.RandBuffer
	scanWindow = 1 << 13 // bytes of the m struct searched
)

var randState, cheapState unsafe.Pointer // found by findRandState

func u64At(p unsafe.Pointer, off int) *uint64 { return (*uint64)(unsafe.Add(p, off)) }
func u32At(p unsafe.Pointer, off int) *uint32 { return (*uint32)(unsafe.Add(p, off)) }

// thread is the running thread's m struct: getm's address as a pointer
// (the m outlives the module; the collector does not move it).
func thread() unsafe.Pointer {
	a := getm()
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}

// findRandState locates the running thread's ChaCha8 state and cheaprand
// word: the state is where one draw returned buf[i] and advanced i by
// one; cheaprand is the word after it, which a cheaprand draw advances
// as xorshift64+ does on wasm.
func findRandState() error {
	m := thread()
	var before [scanWindow]byte
	for try := 0; try < 4 && randState == nil; try++ {
		copy(before[:], unsafe.Slice((*byte)(m), scanWindow))
		x := runtimeRand()
		var found unsafe.Pointer
		for off := 0; off+stateSize <= scanWindow; off += 8 {
			i := binary.LittleEndian.Uint32(before[off+stateI:])
			n := binary.LittleEndian.Uint32(before[off+stateN:])
			if n != chunk && n != chunk-4 || i >= n || *u32At(m, off+stateI) != i+1 {
				continue
			}
			if binary.LittleEndian.Uint64(before[off+stateBuf+8*int(i&(chunk-1)):]) != x {
				continue
			}
			if found != nil {
				return errors.New("the Go runtime's random state is ambiguous; this toolchain is not supported")
			}
			found = unsafe.Add(m, off)
		}
		randState = found // nil when the draw refilled the buffer: try again
	}
	if randState == nil {
		return errors.New("the Go runtime's random state was not found; this toolchain is not supported")
	}
	c := unsafe.Add(randState, stateSize)
	s1, s0 := *u32At(c, 0), *u32At(c, 4)
	r := cheaprand()
	s1 ^= s1 << 17
	s1 = s1 ^ s0 ^ s1>>7 ^ s0>>16
	if *u32At(c, 0) != s0 || *u32At(c, 4) != s1 || r != s0+s1 {
		return errors.New("the Go runtime's cheap random state is not where it was expected; this toolchain is not supported")
	}
	cheapState = c
	return nil
}

// reseed makes the runtime's random state the host's draw for the call
// (wasmabi.RandState of its seed).
func reseed(state *[wasmabi.RandWords]uint64) {
	for i := range wasmabi.RandBuffer {
		*u64At(randState, stateBuf+8*i) = state[i]
	}
	for i := range wasmabi.RandKey {
		*u64At(randState, stateSeed+8*i) = state[wasmabi.RandBuffer+i]
	}
	*u32At(randState, stateI) = 0
	*u32At(randState, stateN) = chunk
	*u32At(randState, stateC) = 0
	*u64At(cheapState, 0) = state[wasmabi.RandWords-1]
}
