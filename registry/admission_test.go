package registry_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/client"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// TestUploadCapsPerTokenAndNamespace: with 8 slots (4 a namespace, 2 a
// token), one token's third stalled upload and a namespace's fifth are
// refused with 429 naming the cap, while another namespace publishes; a
// tenant with a second namespace cannot take the last quarter of the
// slots, which a namespace with nothing in flight can; caps that would
// let one namespace take every slot are refused.
func TestUploadCapsPerTokenAndNamespace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) {
		c.MaxConcurrentUploads, c.BodyReadTimeout = 8, 5*time.Minute
	}))
	second := h.token("ci-payments-2", []string{"publish:payments"}, "")
	third := h.token("ci-payments-3", []string{"publish:payments"}, "")
	stall := func(token, version string) net.Conn {
		a := craft(t, "payments.capped", version, validFiles(version)...)
		ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
		return rawUpload(t, h.url, versionPath("payments", a.Manifest.Connector, version), token, ctype, body, 200)
	}
	for i, token := range []string{h.publisher, h.publisher, second, second} {
		stall(token, "1.0."+string(rune('0'+i)))
		waitFor(t, "the upload admitted", func() bool { return h.srv.UploadsInFlight() == i+1 })
	}
	refused := func(token, says string) {
		t.Helper()
		c := stall(token, "2.0.0")
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		if e := apiError(t, body.Bytes()); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Message, says) {
			t.Errorf("an upload over a cap: %s %v %s, want 429 with Retry-After saying %q", resp.Status, resp.Header, body.String(), says)
		}
	}
	refused(h.publisher, "has 2 uploads in flight, as many as one token may")
	refused(third, `namespace "payments" has 4 uploads in flight, as many as one namespace may`)
	if code, body := h.publish(h.other, "catalog", craft(t, "catalog.meanwhile", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
		t.Fatalf("another namespace while payments is at its cap: %d %s", code, body)
	}
	// A tenant with a second namespace takes 2 more slots (6 of 8); the
	// last 2 are kept for namespaces with nothing in flight.
	alpha1 := h.token("ci-alpha-1", []string{"publish:alpha"}, "")
	alpha2 := h.token("ci-alpha-2", []string{"publish:alpha"}, "")
	stallIn := func(token, ns, version string) net.Conn {
		a := craft(t, ns+".capped", version, validFiles(ns+version)...)
		ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
		return rawUpload(t, h.url, versionPath(ns, a.Manifest.Connector, version), token, ctype, body, 200)
	}
	for i, version := range []string{"1.0.0", "1.0.1"} {
		stallIn(alpha1, "alpha", version)
		waitFor(t, "alpha's upload admitted", func() bool { return h.srv.UploadsInFlight() == 5+i })
	}
	c := stallIn(alpha2, "alpha", "1.0.2")
	c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	var busy bytes.Buffer
	busy.ReadFrom(resp.Body)
	if e := apiError(t, busy.Bytes()); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(e.Message, "kept for namespaces with no upload in flight") {
		t.Errorf("a namespace with uploads in flight reaching for the reserved slots: %s %s", resp.Status, busy.String())
	}
	if code, body := h.publish(h.other, "catalog", craft(t, "catalog.reserved", "1.0.0", validFiles("")...)); code != http.StatusAccepted {
		t.Fatalf("a namespace with nothing in flight, into a reserved slot: %d %s", code, body)
	}

	for _, bad := range []func(*registry.Config){
		func(c *registry.Config) { c.MaxConcurrentUploads, c.MaxUploadsPerNamespace = 8, 8 },
		func(c *registry.Config) { c.MaxUploadsPerNamespace, c.MaxUploadsPerToken = 2, 3 },
	} {
		signer, err := signer.Load(testKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := registry.Config{Meta: h.meta, Blobs: h.blobs, Signer: signer, Worker: []string{"unused"}}
		bad(&cfg)
		if _, err := registry.New(cfg); err == nil || !strings.Contains(err.Error(), "MaxUploadsPer") {
			t.Errorf("caps %d/%d/%d: %v, want them refused", cfg.MaxConcurrentUploads, cfg.MaxUploadsPerNamespace, cfg.MaxUploadsPerToken, err)
		}
	}
}

// TestTricklingUploadsAreCutOff: an upload that sends a byte every 100 ms
// never stalls for the body timeout, yet it is cut off with 408, by the
// minimum rate or by the deadline, and leaves storage as it was.
func TestTricklingUploadsAreCutOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(*registry.Config)
		says string
	}{
		{"below the minimum rate", func(c *registry.Config) { c.BodyReadTimeout, c.MinUploadRate = time.Second, 1000 }, "less than this registry's minimum of 1000 bytes a second"},
		{"past the deadline", func(c *registry.Config) {
			c.BodyReadTimeout, c.MinUploadRate, c.UploadDeadline = time.Second, 1, 2*time.Second
		}, "did not end within 2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, withConfig(diskStores(t), tc.cfg))
			before := h.snapshot()
			a := craft(t, "payments.trickle", "1.0.0", validFiles("")...)
			ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
			c := rawUpload(t, h.url, versionPath("payments", a.Manifest.Connector, "1.0.0"), h.publisher, ctype, body, 0)
			answered := make(chan *http.Response, 1)
			go func() {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Error(err)
				}
				answered <- resp
			}()
			var resp *http.Response
		trickle:
			for i := 0; ; i++ {
				select {
				case resp = <-answered:
					break trickle
				case <-time.After(100 * time.Millisecond):
					if i >= len(body) {
						t.Fatal("the whole body trickled in and no answer came")
					}
					c.Write(body[i : i+1])
				}
			}
			if resp == nil {
				t.FailNow()
			}
			var msg bytes.Buffer
			msg.ReadFrom(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(msg.String(), tc.says) {
				t.Fatalf("a trickling upload: %s %s, want 408 saying %q", resp.Status, msg.String(), tc.says)
			}
			waitForHandlers(t, h)
			if after := h.snapshot(); after != before {
				t.Errorf("storage changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestPublishWaitsOutTheTokenCap: a client whose token is at its cap
// hears 429 with Retry-After, waits, and publishes once the slot frees,
// instead of failing the publish; with no BusyWait it fails at once.
func TestPublishWaitsOutTheTokenCap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) {
		c.MaxConcurrentUploads, c.MaxUploadsPerNamespace, c.MaxUploadsPerToken, c.BodyReadTimeout = 4, 2, 1, 5*time.Minute
	}))
	a := craft(t, "payments.busy", "1.0.0", validFiles("stalled")...)
	ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
	stalled := rawUpload(t, h.url, versionPath("payments", a.Manifest.Connector, "1.0.0"), h.publisher, ctype, body, 200)
	waitFor(t, "the stalled upload admitted", func() bool { return h.srv.UploadsInFlight() == 1 })

	b := craft(t, "payments.busy", "1.0.1", validFiles("waiting")...)
	mj, err := b.Manifest.JSON()
	if err != nil {
		t.Fatal(err)
	}
	k := api.Key{Namespace: "payments", Connector: b.Manifest.Connector, Version: "1.0.1"}
	once := client.New(h.url, h.publisher)
	once.BusyWait = 0
	var ae *api.Error
	if _, _, err := once.Publish(context.Background(), k, mj, b.Zip); !errors.As(err, &ae) || ae.Code != api.CodeTooManyUploads || ae.RetryAfter <= 0 {
		t.Fatalf("a publish over the token's cap with no BusyWait: %v, want too_many_uploads with its Retry-After", err)
	}

	patient := client.New(h.url, h.publisher)
	busy := make(chan time.Duration, 8)
	patient.OnBusy = func(e *api.Error, wait time.Duration) { busy <- wait }
	done := make(chan error, 1)
	go func() {
		_, created, err := patient.Publish(context.Background(), k, mj, b.Zip)
		if err == nil && !created {
			err = errors.New("the registry had the version already")
		}
		done <- err
	}()
	if wait := <-busy; wait < time.Second {
		t.Errorf("waits %s before sending again, want the registry's Retry-After", wait)
	}
	stalled.Close()
	if err := <-done; err != nil {
		t.Fatalf("a publish that waited out the cap: %v", err)
	}
}
