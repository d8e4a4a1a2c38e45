package registry_test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
)

// TestStalledBodiesHoldNothing: 50 unauthenticated uploads that declare a
// body and stall get their 401 and their connection closed at once; of
// 10 authenticated ones by one token that stall mid-body, the 4 its cap
// admits are cut off at the body timeout and the other 6 refused at once
// with 429; meanwhile /healthz and another tenant's publish work; afterwards the process holds
// no more descriptors than before, and shutdown does not wait for anyone.
func TestStalledBodiesHoldNothing(t *testing.T) {
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) { c.BodyReadTimeout = 500 * time.Millisecond }))
	h.do("GET", "/healthz", "", "", nil) // warm: whatever the first request opens for good
	http.DefaultClient.CloseIdleConnections()
	base := openFDs(t)
	u, _ := url.Parse(h.url)
	path := versionPath("payments", "payments.stall", "1.0.0")

	var wg sync.WaitGroup
	answers := make([]string, 60)
	for i := range answers {
		wg.Go(func() {
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			defer c.Close()
			auth := ""
			if i >= 50 {
				auth = "Authorization: Bearer " + h.publisher + "\r\n"
			}
			fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n--x\r", path, u.Host, auth)
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answers[i] = "no answer: " + err.Error()
				return
			}
			resp.Body.Close()
			// The server closes the connection: the next read ends.
			if _, err := bufio.NewReader(c).ReadByte(); err == nil {
				answers[i] = resp.Status + " but the connection stayed open"
				return
			}
			answers[i] = resp.Status
		})
	}
	// Meanwhile the registry serves others.
	if code, body := h.do("GET", "/healthz", "", "", nil); code != http.StatusOK {
		t.Errorf("/healthz during the stall: %d %s", code, body)
	}
	if code, body := h.publish(h.other, "catalog", craft(t, "catalog.fine", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
		t.Errorf("a publish during the stall: %d %s", code, body)
	}
	wg.Wait()
	counts := map[string]int{}
	for i, a := range answers {
		if i < 50 && a != "401 Unauthorized" {
			t.Errorf("stalled unauthenticated upload %d: %s, want 401 Unauthorized", i, a)
		}
		if i >= 50 {
			counts[a]++
		}
	}
	if want := map[string]int{"408 Request Timeout": 4, "429 Too Many Requests": 6}; !maps.Equal(counts, want) {
		t.Errorf("one token's 10 stalled uploads were answered %v, want %v", counts, want)
	}
	waitFor(t, "descriptors back to the baseline", func() bool {
		http.DefaultClient.CloseIdleConnections() // the test's own keep-alive connections
		return openFDs(t) <= base
	})

	// Shutdown with 20 fresh stalled unauthenticated uploads open: nothing
	// holds it up.
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nabcd", path, u.Host)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("stalled upload: %v %v", resp, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.ts.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown waited for stalled clients: %v", err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// waitFor polls cond until it holds or a minute passes (a busy machine
// is slow, never a minute slow).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
