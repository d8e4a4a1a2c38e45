package pgstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"testing"

	"github.com/lib/pq"
)

// TestInlinedParametersRoundTrip sends hostile values as inlined literals
// in front of a BEGIN, the way a transaction's first statement travels,
// and reads them back unchanged.
func TestInlinedParametersRoundTrip(t *testing.T) {
	url := os.Getenv("FLOWGEN_TEST_DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	s := &session{ctx: ctx, conn: conn, prefix: []ahead{{text: "BEGIN READ WRITE"}}}
	defer s.release()
	text := "it's; a \\ 'test' $1 \"q\" -- not a comment\n\x01é"
	blob := []byte{0, '\'', '\\', ';', 0xff}
	var gotText string
	var gotBlob []byte
	var n, neg int64
	var flag bool
	var arr pq.StringArray
	var blobs pq.ByteaArray
	err = s.queryRow(`SELECT $1, $2, $3 + 1, $4, $5, $6, $7, $8, $9, $10, $11`,
		text, blob, int64(41), -7, true, pq.StringArray{text, ""}, pq.ByteaArray{blob, {}},
		int64(0), int64(0), int64(0), int64(0)).Scan(&gotText, &gotBlob, &n, &neg, &flag, &arr, &blobs, new(int64), new(int64), new(int64), new(int64))
	if err != nil {
		t.Fatal(err)
	}
	if gotText != text || !bytes.Equal(gotBlob, blob) || n != 42 || neg != -7 || !flag ||
		len(arr) != 2 || arr[0] != text || len(blobs) != 2 || !bytes.Equal(blobs[0], blob) {
		t.Fatalf("round trip: %q %q %d %d %v %q %q", gotText, gotBlob, n, neg, flag, arr, blobs)
	}
	if !s.open {
		t.Fatal("the first statement did not open the transaction")
	}
	if err := s.commit(""); err != nil {
		t.Fatal(err)
	}
}

func TestInlineRefuses(t *testing.T) {
	if _, err := inline(`SELECT $1`, []any{1.5}); !errors.Is(err, errLiteral) {
		t.Errorf("a float parameter: %v", err)
	}
	if _, err := inline(`SELECT $2`, []any{int64(1)}); err == nil {
		t.Error("a placeholder past the parameters")
	}
}
