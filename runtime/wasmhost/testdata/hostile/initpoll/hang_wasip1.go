//go:build wasip1

package initpoll

import (
	"encoding/binary"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, n int32, nevents unsafe.Pointer) int32

// hang polls on one fd_write subscription and no clock: wazero then
// sleeps math.MaxInt64 nanoseconds through the host's nanosleep, in one
// host call the module cannot be stopped in.
func hang() {
	in := make([]byte, 48)
	in[8] = 2 // eventtype fd_write
	binary.LittleEndian.PutUint32(in[16:], 1)
	out := make([]byte, 32)
	var nev uint32
	pollOneoff(unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), 1, unsafe.Pointer(&nev))
}
