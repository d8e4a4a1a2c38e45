//go:build wasip1

package probe

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

//go:wasmimport flowgen http_get
func hostHTTPGet(ptr, n uint32) uint32

//go:wasmimport flowgen secret
func hostSecret(ptr, n uint32) uint32

//go:wasmimport flowgen reply
func hostReply(ptr uint32)

// rawABI calls the capability host functions with requests outside
// memory, oversized, malformed, and fetches replies to bad addresses.
func rawABI() string {
	var b strings.Builder
	call := func(what string, fn func(uint32, uint32) uint32, ptr, n uint32) {
		l := hostHTTPGet
		_ = l
		got := fn(ptr, n)
		buf := make([]byte, got)
		if got > 0 {
			hostReply(uint32(uintptr(unsafe.Pointer(&buf[0]))))
		}
		fmt.Fprintf(&b, "%s: reply %d bytes %q\n", what, got, buf[:min(len(buf), 120)])
	}
	call("http_get oob", hostHTTPGet, 0xFFFFFFF0, 64)
	call("http_get wrap", hostHTTPGet, 0xFFFFFFFF, 0xFFFFFFFF)
	call("http_get huge", hostHTTPGet, 0, 32<<20+1)
	call("http_get zero", hostHTTPGet, 0, 0)
	// a header map claiming 2^31 entries
	bad := make([]byte, 64)
	binary.LittleEndian.PutUint32(bad[0:], 3)
	copy(bad[4:], "GET")
	binary.LittleEndian.PutUint32(bad[7:], 0)
	binary.LittleEndian.PutUint32(bad[11:], 0x7fffffff)
	call("http_get bad header", hostHTTPGet, uint32(uintptr(unsafe.Pointer(&bad[0]))), 64)
	// a string longer than the message
	binary.LittleEndian.PutUint32(bad[0:], 0xFFFFFFFF)
	call("secret long", hostSecret, uint32(uintptr(unsafe.Pointer(&bad[0]))), 64)
	// a reply fetched to an address outside memory, then again
	n := hostSecret(uint32(uintptr(unsafe.Pointer(&bad[0]))), 4)
	hostReply(0xFFFFFFF0)
	hostReply(0xFFFFFFF0)
	fmt.Fprintf(&b, "reply to oob after %d-byte reply: survived\n", n)
	return b.String()
}
