package bad

import (
	crand "crypto/rand"
	"database/sql"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"
	"unsafe"
)

func clocks() time.Duration {
	start := time.Now()      // want `clock: time.Now reads the clock; declare the clock capability and use ctx.Now`
	return time.Since(start) // want `clock: time.Since reads the clock`
}

func clockAsValue() func() time.Time {
	return time.Now // want `clock: time.Now reads the clock`
}

func randomness() {
	_ = rand.Intn(10) // want `rand: math/rand.Intn draws unseeded randomness`
	b := make([]byte, 8)
	_, _ = crand.Read(b) // want `rand: crypto/rand.Read draws unseeded randomness`
	seeded := rand.New(rand.NewSource(1))
	_ = seeded.Intn(10) // a seeded source is deterministic
}

func environment() (string, string) {
	h, _ := os.Hostname()                     // want `host: os.Hostname depends on the host`
	return os.Getenv("TOKEN"), h + os.Args[0] // want `env: os.Getenv reads or changes the environment; take the value as a param` `host: os.Args depends on the host`
}

func concurrency(a, b chan int) {
	go func() {}() // want `goroutine: a goroutine makes the order`
	select {       // want `select: select over 2 channels`
	case <-a:
	case <-b:
	}
	select { // one channel and a default: deterministic enough
	case <-a:
	default:
	}
}

func mapOrder(m map[string]int) ([]string, int) {
	var keys []string
	for k := range m { // want `maporder: ranging over a map`
		keys = append(keys, k)
	}
	var sb strings.Builder
	for k, v := range m { // want `maporder: ranging over a map`
		fmt.Fprintf(&sb, "%s=%d", k, v)
	}
	sum := 0
	for _, v := range m { // summing is order-independent
		sum += v
	}
	var sorted []string
	for k := range m { // collected, then sorted before anything sees it
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var late []string
	for k := range m { // want `maporder: ranging over a map`
		late = append(late, k)
	}
	keys = append(keys, late...)
	sort.Strings(late)
	return append(keys, sorted...), sum
}

func network() {
	_, _ = http.Get("https://example.com") // want `net: net/http.Get uses the network outside the capabilities`
	c := &http.Client{}
	req, _ := http.NewRequest("GET", "https://example.com", nil)
	_, _ = c.Do(req)                // want `net: net/http.Client.Do uses the network`
	_, _ = sql.Open("postgres", "") // want `net: database/sql.Open uses the network`
}

func files() {
	_ = os.WriteFile("x", nil, 0o644) // want `write: os.WriteFile changes the file system`
	_, _ = os.ReadFile("/etc/passwd") // want `fs: os.ReadFile reads the file system`
}

func accepted() time.Time {
	//flowgen:allow clock -- only logged, never part of the output
	return time.Now()
}

func unwaivable() string {
	//flowgen:allow env -- an env waiver is refused, so this is still reported
	return os.Getenv("HOME") // want `env: os.Getenv`
}

func noReason() time.Time {
	//flowgen:allow clock
	return time.Now() // want `clock: time.Now`
}

func pointers(x *int) uintptr {
	return uintptr(unsafe.Pointer(x)) // want `unsafe: a conversion to unsafe.Pointer`
}

func cancellableSleep(ctx interface{ Done() <-chan struct{} }, d time.Duration) {
	select { // want `select: select over 2 channels`
	case <-ctx.Done(): // not a context.Context: no exemption
	case <-time.After(d):
	}
}
