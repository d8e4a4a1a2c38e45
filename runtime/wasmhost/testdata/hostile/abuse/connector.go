package abuse

import (
	"bytes"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	mrandv1 "math/rand"
	mrand "math/rand/v2"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Connector does what its input says.
type Connector struct{}

var hoard [][]byte

// Run misbehaves.
func (Connector) Run(_ Context, _ Params, in Input) (Output, error) {
	n, m := int64(0), int64(0)
	if in.N != nil {
		n = *in.N
	}
	if in.M != nil {
		m = *in.M
	}
	arg := ""
	if in.Arg != nil {
		arg = *in.Arg
	}
	var r string
	switch in.Do {
	case "stdoutnl":
		// n newlines in one write: one fd_write host call.
		os.Stdout.Write(bytes.Repeat([]byte{'\n'}, int(n)))
		r = "wrote"
	case "iov":
		// one fd_write with n iovecs, each the same m bytes.
		r = rawIOV(int(n), int(m))
	case "pollwrite":
		// poll_oneoff with only an fd_write subscription.
		r = rawPollWrite()
	case "sleep":
		time.Sleep(time.Duration(n) * time.Millisecond)
		r = "slept"
	case "grow":
		// keep n MiB live in a package variable and return successfully.
		for range n {
			hoard = append(hoard, make([]byte, 1<<20))
		}
		r = fmt.Sprintf("holding %d MiB", len(hoard))
	case "det":
		r = determinism(arg)
	case "probe":
		r = probe(arg)
	case "abi":
		r = rawABI()
	case "events":
		for i := range n {
			os.Stat(fmt.Sprint("/x", i))
		}
		r = "stat'ed"
	case "goroutines":
		for range n {
			go func() { select {} }()
		}
		r = "started"
	case "gcdeep":
		var s [][]byte
		for i := range n {
			s = append(s, make([]byte, 1024))
			if i%1000 == 0 {
				s = nil
			}
		}
		r = "ok"
	default:
		r = "fine"
	}
	return Output{Result: &r}, nil
}

// determinism returns what may differ between a fresh and a reused
// instance for the same activation.
func determinism(arg string) string {
	var b strings.Builder
	now := time.Now()
	fmt.Fprintf(&b, "now=%s|", now.String())
	fmt.Fprintf(&b, "unixnano=%d|", now.UnixNano())
	fmt.Fprintf(&b, "randv1=%d|", mrandv1.Int63())
	fmt.Fprintf(&b, "randv2=%d|", mrand.Int64())
	buf := make([]byte, 8)
	crand.Read(buf)
	fmt.Fprintf(&b, "crand=%s|", hex.EncodeToString(buf))
	mp := map[int]int{}
	for i := range 32 {
		mp[i] = i
	}
	var order []int
	for k := range mp {
		order = append(order, k)
	}
	fmt.Fprintf(&b, "order=%v|", order[:8])
	a, c := make(chan int, 1), make(chan int, 1)
	var sel []int
	for range 16 {
		a <- 1
		c <- 2
		select {
		case v := <-a:
			sel = append(sel, v)
			<-c
		case v := <-c:
			sel = append(sel, v)
			<-a
		}
	}
	fmt.Fprintf(&b, "select=%v|", sel)
	done := make(chan string)
	go func() {
		st := make([]byte, 64)
		st = st[:runtime.Stack(st, false)]
		done <- strings.SplitN(string(st), " [", 2)[0]
	}()
	fmt.Fprintf(&b, "goroutine=%s|", <-done)
	fmt.Fprintf(&b, "numgoroutine=%d|", runtime.NumGoroutine())
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(&b, "numgc=%d|", ms.NumGC)
	fmt.Fprintf(&b, "ptr=%p|", new([64]byte))
	t0 := time.Now()
	time.Sleep(time.Millisecond)
	fmt.Fprintf(&b, "elapsed=%s|", time.Since(t0))
	keys := []string{"x"}
	sort.Strings(keys)
	fmt.Fprintf(&b, "timer-fired-before=%v", timerFired)
	if arg == "arm" {
		time.AfterFunc(time.Second, func() { timerFired = true })
	}
	return b.String()
}

var timerFired bool

// probe tries the outside: files, sockets, environment.
func probe(arg string) string {
	var b strings.Builder
	try := func(what string, err error) { fmt.Fprintf(&b, "%s: %v\n", what, err) }
	for _, p := range strings.Split(arg, ",") {
		if p == "" {
			continue
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "read %s: %q %v\n", p, data, err)
	}
	ents, err := os.ReadDir("/")
	fmt.Fprintf(&b, "readdir /: %d %v\n", len(ents), err)
	ents, err = os.ReadDir(".")
	fmt.Fprintf(&b, "readdir .: %d %v\n", len(ents), err)
	_, err = os.Create("/created")
	try("create /created", err)
	try("symlink", os.Symlink("/etc/passwd", "/l"))
	try("mkdir", os.Mkdir("/d", 0o777))
	wd, err := os.Getwd()
	fmt.Fprintf(&b, "getwd: %q %v\n", wd, err)
	host, err := os.Hostname()
	fmt.Fprintf(&b, "hostname: %q %v\n", host, err)
	fmt.Fprintf(&b, "env: %v args: %v pid: %d uid: %d numcpu: %d\n", os.Environ(), os.Args, os.Getpid(), os.Getuid(), runtime.NumCPU())
	for _, addr := range []string{"127.0.0.1:22", "127.0.0.1:5432", "[::1]:5432", "localhost:80", "8.8.8.8:53"} {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if c != nil {
			c.Close()
		}
		fmt.Fprintf(&b, "dial %s: %v\n", addr, err)
	}
	_, err = net.LookupHost("example.com")
	try("lookup example.com", err)
	ln, err := net.Listen("tcp", "0.0.0.0:8080")
	if ln != nil {
		ln.Close()
	}
	try("listen", err)
	b.WriteString(rawFS())
	return b.String()
}
