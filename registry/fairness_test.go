package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// TestOneNamespaceCannotStarveAnother: a hostile tenant holds its
// token's upload slots with stalled uploads, and queues in namespace
// broken a connector whose Run never returns, which takes the one
// certification worker, then another connector; then orders publishes a
// real connector. Its upload is admitted at once, and it is certified
// before broken's second connector starts: one namespace's queue delays another's by at most
// the certification running, which the deadline bounds (the hanging
// connector is rejected for it).
func TestOneNamespaceCannotStarveAnother(t *testing.T) {
	t.Parallel()
	const deadline = 30 * time.Second
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) {
		c.CertifyWorkers, c.CertifyTimeout, c.BodyReadTimeout = 1, deadline, 5*time.Minute
	}))
	// payments' stalled uploads take every slot its token has.
	for i := range 4 {
		a := craft(t, "payments.stalled", fmt.Sprintf("9.0.%d", i), validFiles(fmt.Sprint(i))...)
		ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
		rawUpload(t, h.url, versionPath("payments", a.Manifest.Connector, a.Manifest.ConnectorVersion), h.publisher, ctype, body, 100)
	}
	waitFor(t, "payments' stalled uploads admitted", func() bool { return h.srv.UploadsInFlight() == 4 })

	spin, err := artifact.Build("../certify/testdata/spin", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The hanging connector is broken.spin: payments' token may publish
	// in that namespace too.
	more := h.token("ci-payments-more", []string{"publish:payments", "publish:broken"}, "")
	if code, body := h.publish(more, "broken", spin); code != http.StatusAccepted {
		t.Fatalf("publish spin: %d %s", code, body)
	}
	hanging := meta.Key{Namespace: "broken", Connector: spin.Manifest.Connector, Version: spin.Manifest.ConnectorVersion}
	state := func(k meta.Key) meta.State {
		v, err := h.meta.GetVersion(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		return v.State
	}
	h.startCertifier()
	waitFor(t, "the hanging connector certifying", func() bool { return state(hanging) == meta.Certifying })
	queued := craft(t, "broken.queued", "1.0.0", validFiles("queued")...)
	if code, body := h.publish(more, "broken", queued); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	next := meta.Key{Namespace: "broken", Connector: "broken.queued", Version: "1.0.0"}

	normalize, err := artifact.Build("../examples/connectors/normalize", artifact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	orders := h.token("ci-orders", []string{"publish:orders"}, "")
	if code, body := h.publish(orders, "orders", normalize); code != http.StatusAccepted {
		t.Fatalf("orders' publish while payments holds its slots: %d %s", code, body)
	}
	theirs := meta.Key{Namespace: "orders", Connector: normalize.Manifest.Connector, Version: normalize.Manifest.ConnectorVersion}
	for end := time.Now().Add(10 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		s := state(theirs)
		if s == meta.Certified {
			break
		}
		if s == meta.Rejected {
			v, _ := h.meta.GetVersion(context.Background(), theirs)
			t.Fatalf("orders' connector was rejected: %s", v.Reason)
		}
		if n := state(next); n != meta.Pending {
			t.Fatalf("the same namespace's queued connector was taken (%s) before orders' was certified (%s)", n, s)
		}
		if time.Now().After(end) {
			t.Fatal("orders' connector was never certified")
		}
	}
	if v := h.waitFor(hanging.Namespace, hanging.Connector, hanging.Version); v.State != meta.Rejected || !strings.Contains(v.Reason, "did not finish within 30s") {
		t.Errorf("the hanging connector: %s %q, want rejected at the deadline", v.State, v.Reason)
	}
}
