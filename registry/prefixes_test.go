package registry_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// TestNamespacesOwnTheirModulePaths: a namespace publishes only under
// the module paths it owns (flowgen.dev/connectors/NAMESPACE and the
// prefixes it is given), so a squatter's upload is refused and the real
// owner's goes through; prefixes that overlap another namespace's are
// refused at start.
func TestNamespacesOwnTheirModulePaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(diskStores(t), func(c *registry.Config) {
		c.ModulePrefixes = map[string][]string{"acme": {"github.com/acme/connectors"}}
	}))
	orders := h.token("ci-orders", []string{"publish:orders"}, "")
	acme := h.token("ci-acme", []string{"publish:acme"}, "")
	for _, tc := range []struct {
		token, namespace, module string
		status                   int
		says                     string
	}{
		{orders, "orders", "flowgen.dev/connectors/payments/charge", http.StatusConflict, `module flowgen.dev/connectors/payments/charge is outside what namespace "orders" owns (flowgen.dev/connectors/orders)`},
		{orders, "orders", "flowgen.dev/connectors/orders2/x", http.StatusConflict, "is outside what namespace"},
		{orders, "orders", "github.com/acme/connectors/greet", http.StatusConflict, "is outside what namespace"},
		{h.publisher, "payments", "flowgen.dev/connectors/payments/charge", http.StatusAccepted, ""},
		{acme, "acme", "github.com/acme/connectors/greet", http.StatusAccepted, ""},
		{acme, "acme", "flowgen.dev/connectors/acme/hello", http.StatusAccepted, ""},
		{acme, "acme", "github.com/acme/connectorsx", http.StatusConflict, "is outside what namespace"},
	} {
		connector := tc.namespace + "." + strings.ReplaceAll(tc.module[strings.LastIndexByte(tc.module, '/')+1:], "-", "_")
		code, body := h.publish(tc.token, tc.namespace, craftModule(t, tc.module, connector, "1.0.0", validFiles(tc.module)...))
		if code != tc.status {
			t.Errorf("%s publishing %s: %d %s, want %d", tc.namespace, tc.module, code, body, tc.status)
			continue
		}
		if tc.says != "" {
			if e := apiError(t, body); e.Code != "module_taken" || !strings.Contains(e.Message, tc.says) {
				t.Errorf("%s publishing %s: %s %q, want module_taken saying %q", tc.namespace, tc.module, e.Code, e.Message, tc.says)
			}
		}
	}

	signer, err := signer.Load(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefixes := range []map[string][]string{
		{"a": {"github.com/x"}, "b": {"github.com/x/y"}},
		{"a": {"github.com/Acme"}, "b": {"github.com/acme"}},
		{"a": {"flowgen.dev/connectors/b/z"}},
		{"a": {"flowgen.dev"}},
		{"a": {"not a path"}},
	} {
		cfg := registry.Config{Meta: h.meta, Blobs: h.blobs, Signer: signer, Worker: []string{"unused"}, ModulePrefixes: prefixes}
		if _, err := registry.New(cfg); err == nil || !strings.Contains(err.Error(), "module prefix") {
			t.Errorf("prefixes %v: %v, want them refused", prefixes, err)
		}
	}
}
