package linkname

import (
	"fmt"
	"syscall"
	_ "unsafe" // for go:linkname
)

// Connector reads the clocks through runtime functions it pulls in with
// go:linkname, so that no call names the time package's clock, and opens
// a file with the syscall package, below os.
type Connector struct{}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

//go:linkname walltime time.now
func walltime() (sec int64, nsec int32, mono int64)

// Run opens the input's file and reads the clocks.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	b := make([]byte, 256)
	n := 0
	fd, err := syscall.Open(*in.File, syscall.O_RDONLY, 0)
	if err == nil {
		n, _ = syscall.Read(fd, b)
		syscall.Close(fd)
	}
	sec, _, _ := walltime()
	r := fmt.Sprintf("read %q (err %v), wall %d, monotonic %d", b[:max(n, 0)], err, sec, nanotime())
	return Output{Result: &r}, nil
}
