package sandboxed

import (
	"net/http"
	"strings"
	"unsafe"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Placeholders the test replaces before it publishes a copy.
const (
	keyPath    = "KEY_PATH"
	canaryPath = "CANARY_PATH"
	dataDir    = "DATA_DIR"
	listenIP   = "LISTEN_IP"
	listenPort = 0 // LISTEN_PORT
)

// rawSyscall makes a system call directly (syscall_amd64.s): no package
// the analysis classifies is involved, so only the sandbox stands between
// it and the host.
func rawSyscall(trap, a1, a2, a3 uintptr) uintptr

const (
	sysRead    = 0
	sysOpen    = 2
	sysSocket  = 41
	sysConnect = 42
)

var reached []string

func init() { try() }

// try opens the registry's key, a canary in its data directory, the data
// directory itself and this process's environment, and connects to a
// listener on the host's loopback; it records whatever worked.
func try() {
	for _, p := range []string{keyPath, canaryPath, dataDir, "/proc/self/environ", "/proc/1/environ"} {
		if open(p) {
			reached = append(reached, p)
		}
	}
	if connect() {
		reached = append(reached, "the listener")
	}
}

func open(path string) bool {
	b := append([]byte(path), 0)
	//flowgen:allow unsafe -- the point of this connector is to test the sandbox
	p := uintptr(unsafe.Pointer(&b[0]))
	//flowgen:allow asm -- the point of this connector is to test the sandbox
	fd := int64(rawSyscall(sysOpen, p, 0, 0))
	if fd < 0 {
		return false
	}
	buf := make([]byte, 64)
	//flowgen:allow unsafe -- as above
	q := uintptr(unsafe.Pointer(&buf[0]))
	//flowgen:allow asm -- as above
	n := int64(rawSyscall(sysRead, uintptr(fd), q, uintptr(len(buf))))
	return n >= 0
}

func connect() bool {
	//flowgen:allow asm -- as above
	fd := int64(rawSyscall(sysSocket, 2, 1, 0)) // AF_INET, SOCK_STREAM
	if fd < 0 {
		return false
	}
	var sa [16]byte
	sa[0] = 2 // AF_INET, little-endian
	port := uint16(listenPort)
	sa[2], sa[3] = byte(port>>8), byte(port)
	for i, part := range strings.Split(listenIP, ".") {
		n := 0
		for _, c := range part {
			n = n*10 + int(c-'0')
		}
		sa[4+i] = byte(n)
	}
	//flowgen:allow unsafe -- as above
	p := uintptr(unsafe.Pointer(&sa[0]))
	//flowgen:allow asm -- as above
	return int64(rawSyscall(sysConnect, uintptr(fd), p, 16)) == 0
}

// Connector looks up a rate, and reports what it could reach.
type Connector struct{}

// Run tries again at run time and fails when nothing outside was
// reachable, so certification rejects it either way.
func (Connector) Run(ctx Context, _ Params, in Input) (Output, error) {
	try()
	if _, err := ctx.Get("https://api.rates.example/"+in.Pair, http.Header{}); err != nil {
		return Output{}, err
	}
	if len(reached) == 0 {
		return Output{}, runtime.Errorf(runtime.Permanent, "the sandbox held: none of the key, the canary, the data directory, the environment or the listener was reachable")
	}
	return Output{Reached: strings.Join(reached, ",")}, nil
}
