package wasmabi

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/flowtype"
)

// TestRoundTrip: every message reads back as it was written.
func TestRoundTrip(t *testing.T) {
	q := RunRequest{Key: "k", Attempt: 3, Params: []byte(`{}`), Input: []byte(`{"a":1}`), Rand: RandState([32]byte{1, 2, 3, 4})}
	var w Writer
	q.Append(&w)
	back, err := ReadRunRequest(w.Bytes())
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Errorf("run request: %+v %v", back, err)
	}

	for _, s := range []RunResponse{{Output: []byte(`{"b":2}`)}, {Err: &Error{Kind: flowtype.RateLimited, RetryAfter: int64(time.Second), Status: 429, Message: "slow down"}, Goroutines: 2}} {
		w.Reset()
		s.Append(&w)
		back, err := ReadRunResponse(w.Bytes())
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Errorf("run response: %+v %v, want %+v", back, err, s)
		}
	}

	h := HTTPRequest{Method: "POST", URL: "https://a.example/x", Header: map[string][]string{"B": {"2", "3"}, "A": {"1"}}, Body: []byte("body")}
	w.Reset()
	h.Append(&w)
	hb, err := ReadHTTPRequest(w.Bytes())
	if err != nil || !reflect.DeepEqual(hb, h) {
		t.Errorf("http request: %+v %v", hb, err)
	}

	now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	d := DBRequest{Query: "select $1", Args: []any{int64(1), 2.5, true, []byte("x"), "s", now, nil}}
	w.Reset()
	if err := d.Append(&w); err != nil {
		t.Fatal(err)
	}
	db, err := ReadDBRequest(w.Bytes())
	if err != nil || db.Query != d.Query || len(db.Args) != len(d.Args) || !db.Args[5].(time.Time).Equal(now) || !bytes.Equal(db.Args[3].([]byte), []byte("x")) {
		t.Errorf("db request: %+v %v", db, err)
	}
	w.Reset()
	if err := w.Value(struct{}{}); err == nil {
		t.Error("a value of an unknown type encoded")
	}

	rows := Rows{Columns: []string{"a", "b"}, Values: [][]any{{int64(1), "x"}, {nil, true}}}
	w.Reset()
	rows.Append(&w)
	r := NewReader(w.Bytes())
	if got := r.Rows(); r.Done() != nil || !reflect.DeepEqual(got, rows) {
		t.Errorf("rows: %+v %v", got, r.Err())
	}
}

// FuzzReaders: no message, however malformed, makes a reader panic or
// allocate beyond its input.
func FuzzReaders(f *testing.F) {
	var w Writer
	(&RunRequest{Key: "k", Input: []byte("{}")}).Append(&w)
	f.Add(w.Bytes())
	w.Reset()
	(&HTTPRequest{Method: "GET", Header: map[string][]string{"A": {"b"}}}).Append(&w)
	f.Add(w.Bytes())
	w.Reset()
	(&Rows{Columns: []string{"a"}, Values: [][]any{{int64(1)}}}).Append(&w)
	f.Add(w.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2})
	f.Fuzz(func(t *testing.T, p []byte) {
		ReadRunRequest(p)
		ReadRunResponse(p)
		ReadHTTPRequest(p)
		ReadDBRequest(p)
		r := NewReader(p)
		r.Rows()
		r = NewReader(p)
		r.HTTPResponse()
		r = NewReader(p)
		r.ExecResult()
		r.Error()
	})
}
