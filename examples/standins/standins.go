// Package standins stands in, on the local machine, for the external APIs
// the example connectors call: the shop's catalogue (api.shop.example),
// Stripe's charges and refunds (api.stripe.com) and a Slack incoming
// webhook (hooks.slack.com). It checks requests the way those services do
// (credentials, Stripe's Idempotency-Key replays) and counts what it saw.
//
// make demo serves it on 127.0.0.1 and points the connectors at it with
// the runtime's documented settings (Env): FLOWGEN_CONNECT_TO and
// FLOWGEN_SECRET_<HANDLE>; no spec is edited. The example flow tests call
// it in process.
package standins

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/flowgen-dev/flowgen/runtime/engine"
)

// Secrets are the values of the example connectors' secret handles that
// the stand-ins accept.
var Secrets = map[string]string{
	"stripe/secret-key":      "sk_test_flowgen_demo",
	"stripe/refund-key":      "rk_test_flowgen_demo",
	"shop/catalog-token":     "shop_flowgen_demo",
	"slack/orders-webhook":   "https://hooks.slack.com/services/T000/B000/FLOWGENDEMO",
	"warehouse/database-url": "unused: the runtime binds FLOWGEN_DATABASE_URL",
	"s3/invoice-writer":      "unused: the runtime binds the blob directory",
}

// Hosts are the hosts the stand-ins answer for.
var Hosts = []string{"api.shop.example", "api.stripe.com", "hooks.slack.com"}

// Env is the environment that sends the example connectors' requests for
// Hosts to the stand-ins at addr (host:port) and gives them the secrets
// the stand-ins accept.
func Env(addr string) []string {
	var routes []string
	for _, h := range Hosts {
		routes = append(routes, h+"=http://"+addr)
	}
	env := []string{"FLOWGEN_CONNECT_TO=" + strings.Join(routes, ",")}
	handles := make([]string, 0, len(Secrets))
	for h := range Secrets {
		handles = append(handles, h)
	}
	sort.Strings(handles)
	for _, h := range handles {
		env = append(env, engine.EnvSecrets{}.EnvName(h)+"="+Secrets[h])
	}
	return env
}

// Counts is what the stand-ins saw.
type Counts struct {
	Lookups int
	// Charges counts charges made by Idempotency-Key; Replays the requests
	// answered from an earlier charge with the same key.
	Charges map[string]int
	Replays int
	Refunds int
	Posts   int
}

// APIs is the stand-in server; its zero value is not ready, use New.
type APIs struct {
	mu      sync.Mutex
	counts  Counts
	charges map[string][]byte // Idempotency-Key -> the answer given
}

// New returns stand-ins with nothing seen yet.
func New() *APIs {
	return &APIs{counts: Counts{Charges: map[string]int{}}, charges: map[string][]byte{}}
}

// Counts returns a copy of what the stand-ins saw.
func (a *APIs) Counts() Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counts
	c.Charges = map[string]int{}
	for k, v := range a.counts.Charges {
		c.Charges[k] = v
	}
	return c
}

// ServeHTTP answers by host (the Host header, which FLOWGEN_CONNECT_TO
// keeps) and path.
func (a *APIs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	host := strings.ToLower(r.Host)
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	authorized := func(handle string) bool {
		if r.Header.Get("Authorization") == "Bearer "+Secrets[handle] {
			return true
		}
		reply(http.StatusUnauthorized, map[string]string{"error": "invalid credentials"})
		return false
	}
	switch {
	case host == "api.shop.example" && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v2/products/"):
		if !authorized("shop/catalog-token") {
			return
		}
		a.counts.Lookups++
		sku := strings.TrimPrefix(r.URL.Path, "/v2/products/")
		reply(http.StatusOK, map[string]any{"sku": sku, "name": "Cup " + sku, "price": map[string]int{"cents": 1400}, "stock": 12})
	case host == "api.stripe.com" && r.Method == http.MethodPost && r.URL.Path == "/v1/charges":
		if !authorized("stripe/secret-key") {
			return
		}
		key := r.Header.Get("Idempotency-Key")
		form, err := url.ParseQuery(string(body))
		amount, aerr := strconv.ParseInt(form.Get("amount"), 10, 64)
		if key == "" || err != nil || aerr != nil || amount <= 0 || form.Get("currency") == "" {
			reply(http.StatusBadRequest, map[string]string{"error": "a charge needs an Idempotency-Key, a positive amount and a currency"})
			return
		}
		if prev, ok := a.charges[key]; ok { // Stripe replays the first answer
			a.counts.Replays++
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			w.Write(prev)
			return
		}
		sum := sha256.Sum256([]byte(key))
		answer, _ := json.Marshal(map[string]any{"id": "ch_" + hex.EncodeToString(sum[:6]), "amount": amount, "currency": form.Get("currency"), "status": "succeeded"})
		a.charges[key] = answer
		a.counts.Charges[key]++
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	case host == "api.stripe.com" && r.Method == http.MethodPost && r.URL.Path == "/v1/refunds":
		if !authorized("stripe/refund-key") {
			return
		}
		a.counts.Refunds++
		reply(http.StatusOK, map[string]any{"id": fmt.Sprintf("re_%d", a.counts.Refunds), "status": "succeeded"})
	case host == "hooks.slack.com" && r.Method == http.MethodPost && "https://hooks.slack.com"+r.URL.Path == Secrets["slack/orders-webhook"]:
		a.counts.Posts++
		w.Write([]byte("ok"))
	default:
		reply(http.StatusNotFound, map[string]string{"error": "no stand-in for " + r.Method + " " + host + r.URL.Path})
	}
}
