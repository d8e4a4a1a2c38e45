package assembly

import (
	"fmt"
	"os"
)

// Connector opens a file with a system call of its own, written in amd64
// assembly, so that no Go call names the file system.
type Connector struct{}

// rawOpen is openat(AT_FDCWD, path, O_RDONLY), in sys_amd64.s.
func rawOpen(path *byte) int64

// Run reads the input's file.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	path := append([]byte(*in.File), 0)
	fd := rawOpen(&path[0])
	if fd < 0 {
		r := fmt.Sprintf("errno %d", -fd)
		return Output{Result: &r}, nil
	}
	f := os.NewFile(uintptr(fd), *in.File)
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	r := string(b[:n])
	return Output{Result: &r}, nil
}
