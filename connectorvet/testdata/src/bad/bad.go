package bad

import (
	crand "crypto/rand"
	"database/sql"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"strings"
	"time"
)

// Effects is what the generated node file declares (Effectful).
const Effects = 2

func clocks() time.Duration {
	start := time.Now()      // want `clock: time.Now: declare the clock capability and use ctx.Now`
	return time.Since(start) // want `clock: time.Since`
}

func randomness() {
	_ = rand.Intn(10) // want `rand: math/rand.Intn draws unseeded randomness`
	b := make([]byte, 8)
	_, _ = crand.Read(b) // want `rand: crypto/rand.Read draws unseeded randomness`
}

func environment() string {
	return os.Getenv("TOKEN") // want `env: os.Getenv: take the value as a param`
}

func concurrency(a, b chan int) {
	go func() {}() // want `goroutine: a goroutine makes the order`
	select {       // want `goroutine: select over 2 channels`
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
	return keys, sum
}

func bypass() {
	_, _ = http.Get("https://example.com") // want `bypass: net/http.Get`
	c := &http.Client{}
	req, _ := http.NewRequest("GET", "https://example.com", nil)
	_, _ = c.Do(req)                // want `bypass: net/http.Client.Do`
	_, _ = sql.Open("postgres", "") // want `bypass: database/sql.Open`
}

func accepted() time.Time {
	//flowgen:allow clock -- only logged, never part of the output
	return time.Now()
}

func writesAreFineWhenEffectful() {
	_ = os.WriteFile("x", nil, 0o644)
}

func cancellableSleep(ctx interface{ Done() <-chan struct{} }, d time.Duration) {
	select { // want `goroutine: select over 2 channels`
	case <-ctx.Done(): // not a context.Context: no exemption
	case <-time.After(d):
	}
}
