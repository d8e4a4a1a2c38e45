//go:build wasip1

package abuse

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs unsafe.Pointer, n int32, nwritten unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, n int32, nevents unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(dirfd int32, dirflags int32, path unsafe.Pointer, pathLen int32, oflags int32, rightsBase, rightsInheriting int64, fdflags int32, fd unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd int32, flags int32, newfd unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 sock_recv
func sockRecv(fd int32, iovs unsafe.Pointer, n int32, flags int32, nread unsafe.Pointer, oflags unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_read
func fdRead(fd int32, iovs unsafe.Pointer, n int32, nread unsafe.Pointer) int32

//go:wasmimport wasi_snapshot_preview1 fd_renumber
func fdRenumber(from, to int32) int32

//go:wasmimport flowgen reply
func hostReply(ptr uint32)

//go:wasmimport flowgen heartbeat
func hostHeartbeat()

// rawIOV writes, in one fd_write, n iovecs each pointing at the same m
// bytes of 'x'.
func rawIOV(n, m int) string {
	data := make([]byte, m)
	for i := range data {
		data[i] = 'x'
	}
	iovs := make([]uint32, 2*n)
	for i := 0; i < n; i++ {
		iovs[2*i] = uint32(uintptr(unsafe.Pointer(&data[0])))
		iovs[2*i+1] = uint32(m)
	}
	var nw uint32
	errno := fdWrite(2, unsafe.Pointer(&iovs[0]), int32(n), unsafe.Pointer(&nw))
	return fmt.Sprintf("fd_write errno %d wrote %d", errno, nw)
}

// rawPollWrite polls on one fd_write subscription only: no clock.
func rawPollWrite() string {
	in := make([]byte, 48)
	binary.LittleEndian.PutUint64(in[0:], 7) // userdata
	in[8] = 2                                // eventtype fd_write
	binary.LittleEndian.PutUint32(in[16:], 1)
	out := make([]byte, 32)
	var nev uint32
	errno := pollOneoff(unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), 1, unsafe.Pointer(&nev))
	return fmt.Sprintf("poll_oneoff errno %d nevents %d", errno, nev)
}

// rawFS opens paths relative to every low descriptor, and tries the
// socket calls.
func rawFS() string {
	var b strings.Builder
	for fd := int32(0); fd < 6; fd++ {
		for _, p := range []string{"etc/passwd", "../etc/passwd", "/etc/passwd", ".", "..", ""} {
			pb := []byte(p + "\x00")
			var nfd int32 = -1
			errno := pathOpen(fd, 1, unsafe.Pointer(&pb[0]), int32(len(p)), 0, 0x1fffffff, 0x1fffffff, 0, unsafe.Pointer(&nfd))
			if errno == 0 {
				buf := make([]byte, 64)
				iov := []uint32{uint32(uintptr(unsafe.Pointer(&buf[0]))), 64}
				var nr uint32
				rerr := fdRead(nfd, unsafe.Pointer(&iov[0]), 1, unsafe.Pointer(&nr))
				fmt.Fprintf(&b, "path_open(%d,%q) OPENED fd %d read errno %d %q\n", fd, p, nfd, rerr, buf[:nr])
			} else {
				fmt.Fprintf(&b, "path_open(%d,%q) errno %d\n", fd, p, errno)
			}
		}
		var nfd int32
		fmt.Fprintf(&b, "sock_accept(%d) errno %d\n", fd, sockAccept(fd, 0, unsafe.Pointer(&nfd)))
		buf := make([]byte, 16)
		iov := []uint32{uint32(uintptr(unsafe.Pointer(&buf[0]))), 16}
		var nr, of uint32
		fmt.Fprintf(&b, "sock_recv(%d) errno %d\n", fd, sockRecv(fd, unsafe.Pointer(&iov[0]), 1, 0, unsafe.Pointer(&nr), unsafe.Pointer(&of)))
	}
	fmt.Fprintf(&b, "fd_renumber(3,1) errno %d\n", fdRenumber(3, 1))
	return b.String()
}

// rawABI calls the plumbing with pointers outside memory and without a
// pending reply.
func rawABI() string {
	hostReply(0xFFFFFFF0)
	hostReply(0)
	hostReply(0xFFFFFFFF)
	for range 1000 {
		hostHeartbeat()
	}
	return "survived"
}
