package putinvoice

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/s3blobs/s3test"
	"github.com/flowgen-dev/flowgen/testharness/fixturetest"
)

// FixtureEnv stores the fixtures' invoices in S3-compatible storage, the
// server CI runs, in the bucket the fixtures name.
func (*Connector) FixtureEnv(t testing.TB) fixturetest.Env {
	b := s3test.Blobs(t)
	s3test.Bucket(t, b, "acme-invoices")
	return fixturetest.Env{Blobs: b}
}

// TestETagIsWhatS3Reports: the ETag the connector reports without asking is
// the one S3 gives the stored object.
func TestETagIsWhatS3Reports(t *testing.T) {
	b := s3test.Blobs(t)
	bucket := s3test.FreshBucket(t, b)
	node := NewNode(&Connector{})
	caps := engine.Grants{Blobs: b}.For(node.Info())
	ctx := runtime.NewContext(context.Background(), "", 1, caps)
	in := `{"order_id": "ord-9", "customer": {"id": "c", "email": "c@example.com"}, "lines": [{"sku": "SKU-9", "qty": 2}],
		"total_cents": 1999, "currency": "GBP", "payment_method": "invoice"}`
	out, err := node.Run(ctx, json.RawMessage(`{"bucket": "`+bucket+`"}`), json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var o Output
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	info, err := b.Client().StatObject(context.Background(), bucket, o.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if `"`+info.ETag+`"` != o.Etag || o.Key != "invoices/ord-9.txt" {
		t.Errorf("output %+v, S3 ETag %q", o, info.ETag)
	}
}
