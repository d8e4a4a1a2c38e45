package wasmabi

import (
	"encoding/binary"
	"fmt"
	"time"
)

// RunRequest is one activation, as the host hands it to the module.
type RunRequest struct {
	Key     string
	Attempt uint32
	Params  []byte
	Input   []byte
	// Rand is the module's own random state (map iteration order,
	// select) for this call, so that they are a function of the
	// activation, not of what the instance ran before: RandState of the
	// activation's seed, drawn by the host, which draws it faster.
	Rand [RandWords]uint64
}

// Append writes q.
func (q *RunRequest) Append(w *Writer) {
	w.Uint32(Version)
	w.String(q.Key)
	w.Uint32(q.Attempt)
	w.ByteString(q.Params)
	w.ByteString(q.Input)
	for _, s := range q.Rand {
		w.Uint64(s)
	}
}

// ReadRunRequest reads a RunRequest; its byte fields alias p.
func ReadRunRequest(p []byte) (RunRequest, error) {
	r := NewReader(p)
	if v := r.Uint32(); r.Err() == nil && v != Version {
		return RunRequest{}, fmt.Errorf("wasmabi: run request of version %d, this module speaks %d", v, Version)
	}
	q := RunRequest{Key: r.String(), Attempt: r.Uint32(), Params: r.ByteString(), Input: r.ByteString()}
	if p := r.take(8 * RandWords); p != nil { // one read: a module pays for every call
		for i := range q.Rand {
			q.Rand[i] = binary.LittleEndian.Uint64(p[8*i:])
		}
	}
	return q, r.Done()
}

// RunResponse is what one activation produced.
type RunResponse struct {
	// Err is set when the activation failed; Output is empty then.
	Err    *Error
	Output []byte
	// Goroutines is how many goroutines the activation left running
	// after Run returned; the host retires such an instance.
	Goroutines uint32
}

// Append writes s.
func (s *RunResponse) Append(w *Writer) {
	if s.Err != nil {
		w.Uint8(uint8(StatusError))
		w.AppendError(*s.Err)
	} else {
		w.Uint8(uint8(StatusOK))
		w.ByteString(s.Output)
	}
	w.Uint32(s.Goroutines)
}

// ReadRunResponse reads a RunResponse; Output aliases p.
func ReadRunResponse(p []byte) (RunResponse, error) {
	r := NewReader(p)
	var s RunResponse
	switch st := Status(r.Uint8()); st {
	case StatusOK:
		s.Output = r.ByteString()
	case StatusError:
		e := r.Error()
		s.Err = &e
	default:
		if r.Err() == nil {
			return s, fmt.Errorf("wasmabi: run response status %d", st)
		}
	}
	s.Goroutines = r.Uint32()
	return s, r.Done()
}

// HTTPRequest is a request of the HTTP capabilities. Pin is set only for
// a pinned read.
type HTTPRequest struct {
	Method, URL string
	Header      map[string][]string
	Body        []byte
	Pin         string
}

// Append writes q.
func (q *HTTPRequest) Append(w *Writer) {
	w.String(q.Method)
	w.String(q.URL)
	w.Header(q.Header)
	w.ByteString(q.Body)
	w.String(q.Pin)
}

// ReadHTTPRequest reads an HTTPRequest.
func ReadHTTPRequest(p []byte) (HTTPRequest, error) {
	r := NewReader(p)
	q := HTTPRequest{Method: r.String(), URL: r.String(), Header: r.Header(), Body: r.ByteString(), Pin: r.String()}
	return q, r.Done()
}

// HTTPResponse is a fully read HTTP response.
type HTTPResponse struct {
	Status uint32
	Header map[string][]string
	Body   []byte
}

// Append writes s.
func (s *HTTPResponse) Append(w *Writer) {
	w.Uint32(s.Status)
	w.Header(s.Header)
	w.ByteString(s.Body)
}

// ReadHTTPResponse reads an HTTPResponse.
func (r *Reader) HTTPResponse() HTTPResponse {
	return HTTPResponse{Status: r.Uint32(), Header: r.Header(), Body: r.ByteString()}
}

// The kinds of a database value.
const (
	valueNil uint8 = iota
	valueInt
	valueFloat
	valueBool
	valueBytes
	valueString
	valueTime
)

// Value appends a database value: nil, an integer, float, bool, []byte,
// string or time.Time (what database/sql/driver.Value may hold). Any
// other type is an error.
func (w *Writer) Value(v any) error {
	switch v := v.(type) {
	case nil:
		w.Uint8(valueNil)
	case int64:
		w.Uint8(valueInt)
		w.Int64(v)
	case int:
		w.Uint8(valueInt)
		w.Int64(int64(v))
	case int32:
		w.Uint8(valueInt)
		w.Int64(int64(v))
	case float64:
		w.Uint8(valueFloat)
		w.Float64(v)
	case float32:
		w.Uint8(valueFloat)
		w.Float64(float64(v))
	case bool:
		w.Uint8(valueBool)
		w.Bool(v)
	case []byte:
		w.Uint8(valueBytes)
		w.ByteString(v)
	case string:
		w.Uint8(valueString)
		w.String(v)
	case time.Time:
		w.Uint8(valueTime)
		w.String(v.Format(time.RFC3339Nano))
	default:
		return fmt.Errorf("wasmabi: a database value of type %T", v)
	}
	return nil
}

// Value reads a database value.
func (r *Reader) Value() any {
	switch k := r.Uint8(); k {
	case valueNil:
		return nil
	case valueInt:
		return r.Int64()
	case valueFloat:
		return r.Float64()
	case valueBool:
		return r.Bool()
	case valueBytes:
		return append([]byte(nil), r.ByteString()...)
	case valueString:
		return r.String()
	case valueTime:
		s := r.String()
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("wasmabi: time %q: %w", s, err)
		}
		return t
	default:
		if r.err == nil {
			r.err = fmt.Errorf("wasmabi: database value of kind %d", k)
		}
		return nil
	}
}

// DBRequest is a query or statement with its arguments.
type DBRequest struct {
	Query string
	Args  []any
}

// Append writes q; an argument of a type Value does not know is an error.
func (q *DBRequest) Append(w *Writer) error {
	w.String(q.Query)
	w.Uint32(uint32(len(q.Args)))
	for i, a := range q.Args {
		if err := w.Value(a); err != nil {
			return fmt.Errorf("argument %d: %w", i+1, err)
		}
	}
	return nil
}

// ReadDBRequest reads a DBRequest.
func ReadDBRequest(p []byte) (DBRequest, error) {
	r := NewReader(p)
	q := DBRequest{Query: r.String()}
	n := r.Uint32()
	if int(n) > len(r.buf) {
		return q, errShort
	}
	for range n {
		q.Args = append(q.Args, r.Value())
	}
	return q, r.Done()
}

// Rows is a query's result, read in full.
type Rows struct {
	Columns []string
	Values  [][]any
}

// Append writes s.
func (s *Rows) Append(w *Writer) error {
	w.Uint32(uint32(len(s.Columns)))
	for _, c := range s.Columns {
		w.String(c)
	}
	w.Uint32(uint32(len(s.Values)))
	for _, row := range s.Values {
		for _, v := range row {
			if err := w.Value(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Rows reads a Rows.
func (r *Reader) Rows() Rows {
	var s Rows
	n := r.Uint32()
	if int(n) > len(r.buf)/4 {
		r.err = errShort
		return s
	}
	for range n {
		s.Columns = append(s.Columns, r.String())
	}
	rows := r.Uint32()
	if len(s.Columns) == 0 && rows > 0 || int(rows) > len(r.buf) {
		r.err = errShort
		return s
	}
	for range rows {
		row := make([]any, len(s.Columns))
		for i := range row {
			row[i] = r.Value()
		}
		if r.err != nil {
			return s
		}
		s.Values = append(s.Values, row)
	}
	return s
}

// ExecResult is what a statement did.
type ExecResult struct {
	RowsAffected, LastInsertID       int64
	HasRowsAffected, HasLastInsertID bool
}

// Append writes s.
func (s *ExecResult) Append(w *Writer) {
	w.Int64(s.RowsAffected)
	w.Bool(s.HasRowsAffected)
	w.Int64(s.LastInsertID)
	w.Bool(s.HasLastInsertID)
}

// ExecResult reads an ExecResult.
func (r *Reader) ExecResult() ExecResult {
	return ExecResult{RowsAffected: r.Int64(), HasRowsAffected: r.Bool(), LastInsertID: r.Int64(), HasLastInsertID: r.Bool()}
}
