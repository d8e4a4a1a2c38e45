package registry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing"
)

// TestOpenAPIDocumentsEveryRoute: docs/registry-openapi.yaml has every
// route the server registers, with its method, and no route it does not.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/registry-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m, err := meta.OpenBolt(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, _ := blobstore.NewDisk(t.TempDir())
	priv, _, _ := signing.GenerateKey(nil)
	signer, _ := signing.LoadSigner(priv, nil)
	s, err := New(Config{Meta: m, Blobs: b, Signer: signer, Worker: []string{"unused"}})
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	for _, p := range s.patterns {
		if p == "GET /go/{path...}" {
			for _, suffix := range []string{"/@v/list", "/@latest", "/@v/{version}.info", "/@v/{version}.mod", "/@v/{version}.zip"} {
				if !documented["GET /go/{module}"+suffix] {
					t.Errorf("the Go proxy's %s is not documented", suffix)
				}
				delete(documented, "GET /go/{module}"+suffix)
			}
			continue
		}
		if !documented[p] {
			t.Errorf("route %s is not in docs/registry-openapi.yaml", p)
		}
		delete(documented, p)
	}
	for p := range documented {
		t.Errorf("docs/registry-openapi.yaml documents %s, which the server does not serve", p)
	}
}
