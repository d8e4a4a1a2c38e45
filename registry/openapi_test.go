package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/signing/signer"
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
	priv, _, _ := signer.GenerateKey(nil)
	signer, _ := signer.Load(priv, nil)
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

// TestOpenAPIListsEveryErrorCode: the Error schema's code enum is the
// code table of registry/api, no more and no less.
func TestOpenAPIListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/registry-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Properties map[string]struct {
						Enum []string `yaml:"enum"`
					} `yaml:"properties"`
				} `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range api.Codes() {
		want = append(want, string(c))
	}
	got := doc.Components.Schemas["Error"].Properties["error"].Properties["code"].Enum
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the OpenAPI Error codes are\n%v\nregistry/api has\n%v", got, want)
	}
}
