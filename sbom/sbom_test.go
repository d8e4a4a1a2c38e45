package sbom

import (
	"bytes"
	"strings"
	"testing"
	"time"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
)

func generate(t *testing.T) *spdx.Document { return generateFor(t, "../examples/connectors/charge") }

func generateFor(t *testing.T, dir string) *spdx.Document {
	t.Helper()
	doc, err := Generate(dir, Options{
		Name: "payments.charge", Version: "2.1.0", Digest: strings.Repeat("ab", 32),
		Created: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), Tool: "flowgen-test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func write(t *testing.T, doc *spdx.Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := spdxjson.Write(doc, &b, spdxjson.Indent("  ")); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRoundTripsAndValidates: the document survives tools-golang's JSON
// writer and parser unchanged, validates, and is the same bytes each time.
func TestRoundTripsAndValidates(t *testing.T) {
	doc := generate(t)
	if err := Validate(doc); err != nil {
		t.Fatal(err)
	}
	out := write(t, doc)
	back, err := spdxjson.Read(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("tools-golang cannot parse what we wrote: %v", err)
	}
	if err := Validate(back); err != nil {
		t.Fatalf("parsed document does not validate: %v", err)
	}
	if again := write(t, back); !bytes.Equal(again, out) {
		t.Errorf("round trip changed the document")
	}
	if second := write(t, generate(t)); !bytes.Equal(second, out) {
		t.Errorf("two runs gave different documents")
	}
}

func TestDescribesTheConnectorAndItsModules(t *testing.T) {
	doc := generateFor(t, "testdata/keyed")
	byName := map[string]*spdx.Package{}
	for _, p := range doc.Packages {
		byName[p.PackageName] = p
	}
	root := byName["github.com/flowgen-dev/flowgen/sbom/testdata/keyed"]
	if root == nil || root.PackageVersion != "2.1.0" || root.PackageExternalReferences[0].Locator != "pkg:golang/github.com/flowgen-dev/flowgen/sbom/testdata/keyed@2.1.0" {
		t.Fatalf("connector package: %+v", root)
	}
	cbor := byName["github.com/fxamacker/cbor/v2"]
	if cbor == nil || cbor.PackageVersion != "v2.10.0" || len(cbor.PackageChecksums) != 1 || len(cbor.PackageChecksums[0].Value) != 64 ||
		cbor.PackageExternalReferences[0].Locator != "pkg:golang/github.com/fxamacker/cbor/v2@v2.10.0" {
		t.Fatalf("a dependency module: %+v", cbor)
	}
	if byName["github.com/minio/minio-go/v7"] != nil {
		t.Error("a module the connector does not use is listed")
	}
	var describes, dependsOnCBOR, transitive bool
	for _, r := range doc.Relationships {
		switch {
		case r.Relationship == "DESCRIBES" && r.RefB.ElementRefID == root.PackageSPDXIdentifier:
			describes = true
		case r.Relationship == "DEPENDS_ON" && r.RefA.ElementRefID == root.PackageSPDXIdentifier && r.RefB.ElementRefID == cbor.PackageSPDXIdentifier:
			dependsOnCBOR = true
		case r.Relationship == "DEPENDS_ON" && r.RefA.ElementRefID == cbor.PackageSPDXIdentifier:
			transitive = true // cbor requires x448/float16
		}
	}
	if !describes || !dependsOnCBOR || !transitive {
		t.Errorf("relationships: describes=%v root->cbor=%v cbor->x=%v", describes, dependsOnCBOR, transitive)
	}
}
