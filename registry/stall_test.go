package registry_test

import (
	"bufio"
	"context"
	"fmt"
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
// body and stall get their 401 and their connection closed at once, 10
// authenticated ones that stall mid-body are cut off at the body timeout;
// meanwhile /healthz and a real publish work; afterwards the process holds
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
	if code, body := h.publish(h.publisher, "payments", craft(t, "payments.fine", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
		t.Errorf("a publish during the stall: %d %s", code, body)
	}
	wg.Wait()
	for i, a := range answers {
		want := "401 Unauthorized"
		if i >= 50 {
			want = "408 Request Timeout"
		}
		if a != want {
			t.Errorf("stalled upload %d: %s, want %s", i, a, want)
		}
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

// waitFor polls cond until it holds or 15 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
