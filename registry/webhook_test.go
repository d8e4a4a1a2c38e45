package registry_test

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

var hookSecret = []byte("0123456789abcdef0123456789abcdef")

// receiver records the events it accepts; it fails the first fail
// requests with 500.
type receiver struct {
	mu       sync.Mutex
	fail     int
	requests int
	events   []registry.WebhookEvent
	badSig   int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	if rc.requests <= rc.fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	want := registry.SignWebhook(hookSecret, r.Header.Get("X-Flowgen-Timestamp"), body)
	if !hmac.Equal([]byte(want), []byte(r.Header.Get("X-Flowgen-Signature"))) {
		rc.badSig++
	}
	var e registry.WebhookEvent
	json.Unmarshal(body, &e)
	rc.events = append(rc.events, e)
}

func (rc *receiver) snapshot() ([]registry.WebhookEvent, int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]registry.WebhookEvent(nil), rc.events...), rc.requests, rc.badSig
}

func hookConfig(url string, allowPrivate bool) func(*registry.Config) {
	return func(c *registry.Config) {
		c.Webhooks = []registry.Webhook{{Name: "platform", URL: url, Secret: hookSecret, AllowPrivate: allowPrivate}}
		c.WebhookRetry, c.WebhookPoll, c.WebhookSettle = 20*time.Millisecond, 50*time.Millisecond, -1
	}
}

func runHooks(t *testing.T, srv *registry.Server) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.RunWebhooks(ctx)
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// TestWebhooksDeliverSignedEventsAtLeastOnce: publish and certification
// events reach the target in order, signed, retried through its failures;
// after a restart the deliverer resumes from its place in the outbox.
func TestWebhooksDeliverSignedEventsAtLeastOnce(t *testing.T) {
	t.Parallel()
	rc := &receiver{fail: 2}
	target := httptest.NewServer(rc)
	defer target.Close()
	h := newHarness(t, withConfig(diskStores(t), hookConfig(target.URL, true)))
	h.startCertifier()
	stop := runHooks(t, h.srv)
	if code, body := h.publish(h.publisher, "payments", craft(t, "payments.hooked", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	h.waitFor("payments", "payments.hooked", "1.0.0")
	waitFor(t, "two events", func() bool { e, _, _ := rc.snapshot(); return len(e) >= 2 })
	events, requests, badSig := rc.snapshot()
	if events[0].Type != "version.published" || events[1].Type != "version.rejected" || events[0].Version != "payments/payments.hooked@1.0.0" ||
		events[0].ID >= events[1].ID || requests < 4 || badSig != 0 {
		t.Fatalf("events %+v after %d requests, %d bad signatures", events, requests, badSig)
	}
	// Stopped once the deliverer has the target's answer for both (a stop
	// before that may send one again: at least once).
	waitFor(t, "the cursor past both events", func() bool {
		c, err := h.meta.Cursor(context.Background(), "webhook/platform")
		return err == nil && c >= events[1].ID
	})
	stop()

	// A second process on the same stores: new events only.
	signer, _ := signer.Load(testKey, nil)
	cfg := registry.Config{Meta: h.meta, Blobs: h.blobs, Signer: signer, Worker: []string{testBinary}, WorkDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	hookConfig(target.URL, true)(&cfg)
	again, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runHooks(t, again)
	if code, body := h.publish(h.publisher, "payments", craft(t, "payments.hooked", "1.0.1", validFiles("1")...)); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	waitFor(t, "the event after the restart", func() bool { e, _, _ := rc.snapshot(); return len(e) >= 3 })
	events, _, _ = rc.snapshot()
	if last := events[len(events)-1]; last.Version != "payments/payments.hooked@1.0.1" || last.ID <= events[1].ID {
		t.Fatalf("after the restart: %+v", events)
	}
	for _, e := range events[2:] {
		if e.Version == "payments/payments.hooked@1.0.0" {
			t.Errorf("an acknowledged event was sent again after the restart: %+v", e)
		}
	}
}

// TestWebhookTargetsStayOutside: a literal internal address is refused at
// start; a name that resolves to loopback is refused when dialled, and the
// receiver there never hears a thing; a redirect is not followed.
func TestWebhookTargetsStayOutside(t *testing.T) {
	t.Parallel()
	signer, _ := signer.Load(testKey, nil)
	o := diskStores(t)
	for _, url := range []string{"https://127.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.0.0.8/hook", "http://hooks.example.com/x",
		// Special-purpose ranges beyond loopback and private, and IPv6
		// forms that embed an IPv4 address.
		"https://100.100.100.200/latest", "https://192.0.0.192/opc", "https://198.18.0.1/hook", "https://240.0.0.1/hook", "https://255.255.255.255/hook",
		"https://[64:ff9b::a9fe:a9fe]/latest", "https://[::a9fe:a9fe]/latest", "https://[::ffff:169.254.169.254]/latest", "https://[2002:a9fe:a9fe::1]/hook",
		"https://[fd00:ec2::254]/latest", "https://[100::1]/hook", "https://[2001:db8::1]/hook", "https://metadata.google.internal/computeMetadata/v1/"} {
		cfg := registry.Config{Meta: o.meta, Blobs: o.blobs, Signer: signer, Worker: []string{"unused"}}
		hookConfig(url, false)(&cfg)
		if _, err := registry.New(cfg); err == nil {
			t.Errorf("%s accepted as a webhook target", url)
		}
	}

	// A name that resolves to this machine (its host name, which names
	// no special range by itself): no connection is ever made.
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		t.Fatalf("this machine's name %s does not resolve: %v", name, err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addrs[0], "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			c.Close()
		}
	}()
	viaName := "https://" + net.JoinHostPort(name, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)) + "/hook"
	h := newHarness(t, withConfig(diskStores(t), hookConfig(viaName, false)))
	runHooks(t, h.srv)
	h.publish(h.publisher, "payments", craft(t, "payments.ssrf", "1.0.0", validFiles("")...))
	waitFor(t, "a failed delivery", func() bool {
		_, body := h.do("GET", "/metrics", h.admin, "", nil)
		return strings.Contains(string(body), `registry_webhook_deliveries_total{outcome="failed",webhook="platform"}`)
	})
	if n := conns.Load(); n != 0 {
		t.Errorf("the internal listener got %d connections", n)
	}

	final := &receiver{}
	dest := httptest.NewServer(final)
	defer dest.Close()
	redirector := httptest.NewServer(http.RedirectHandler(dest.URL, http.StatusFound))
	defer redirector.Close()
	h2 := newHarness(t, withConfig(diskStores(t), hookConfig(redirector.URL, true)))
	runHooks(t, h2.srv)
	h2.publish(h2.publisher, "payments", craft(t, "payments.redirected", "1.0.0", validFiles("")...))
	waitFor(t, "a failed delivery", func() bool {
		_, body := h2.do("GET", "/metrics", h2.admin, "", nil)
		return strings.Contains(string(body), `registry_webhook_deliveries_total{outcome="failed",webhook="platform"}`)
	})
	if _, n, _ := final.snapshot(); n != 0 {
		t.Errorf("a redirect was followed: the destination got %d requests", n)
	}
}
