package registry_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/signing"
)

// TestServesTheFlowgenModule: the proxy serves the flowgen module the
// registry certifies with, at its content-derived version, to pull tokens
// only, and /v1/flowgen-module signs its zip with the registry's key.
func TestServesTheFlowgenModule(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	want, err := flowgenmod.Build(t.Context(), repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	base := "/go/github.com/flowgen-dev/flowgen/@v/"
	if code, body := h.do("GET", base+"list", h.puller, "", nil); code != http.StatusOK || string(body) != want.Version+"\n" {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := h.do("GET", base+want.Version+".info", h.puller, "", nil); code != http.StatusOK || !strings.Contains(string(body), want.Version) {
		t.Fatalf("info: %d %s", code, body)
	}
	if code, body := h.do("GET", base+want.Version+".mod", h.puller, "", nil); code != http.StatusOK || !bytes.Equal(body, want.GoMod) {
		t.Fatalf("mod: %d %.100s", code, body)
	}
	code, zipData := h.do("GET", base+want.Version+".zip", h.puller, "", nil)
	if code != http.StatusOK || !bytes.Equal(zipData, want.Zip) {
		t.Fatalf("zip: %d, %d bytes", code, len(zipData))
	}
	if _, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData))); err != nil {
		t.Fatal(err)
	}
	if code, _ := h.do("GET", base+"v0.0.0-00010101000000-000000000001.zip", h.puller, "", nil); code != http.StatusNotFound {
		t.Errorf("another version: %d", code)
	}
	if code, _ := h.do("GET", base+"list", "", "", nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", code)
	}
	code, body := h.do("GET", "/v1/flowgen-module", h.puller, "", nil)
	var info api.FlowgenModuleInfo
	if code != http.StatusOK || json.Unmarshal(body, &info) != nil {
		t.Fatalf("flowgen-module: %d %s", code, body)
	}
	sum := sha256.Sum256(zipData)
	if info.Version != want.Version || info.ZipSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("info %+v", info)
	}
	if err := signing.Verify(h.pub, zipData, []byte(info.Signature)); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
}
