package wasmhost

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// capabilityFunc serves one capability call: the request as the module
// wrote it (a copy), the reply's payload or an error.
type capabilityFunc func(inst *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error

// methodOverrides are the headers with which a request asks a server to
// treat it as another method; a read may not send them.
var methodOverrides = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// exportHostFunctions defines module "flowgen": every capability's host
// function and the plumbing. Which of them a module may import is checked
// at Load; each call is checked again against the module's declaration.
func exportHostFunctions(b wazero.HostModuleBuilder) {
	i32 := api.ValueTypeI32
	capability := func(name string, c flowtype.Capability, fn capabilityFunc) {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			inst := instanceOf(ctx)
			stack[0] = api.EncodeU32(inst.serve(mod, name, c, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), fn))
		}), []api.ValueType{i32, i32}, []api.ValueType{i32}).Export(name)
	}
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		instanceOf(ctx).reply(mod, api.DecodeU32(stack[0]))
	}), []api.ValueType{i32}, nil).Export(wasmabi.FuncReply)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, _ []uint64) {
		if act := instanceOf(ctx).act; act != nil {
			act.rc.Heartbeat()
		}
	}), nil, nil).Export(wasmabi.FuncHeartbeat)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
		instanceOf(ctx).settle(api.DecodeU32(stack[0]) != 0)
	}), []api.ValueType{i32}, nil).Export(wasmabi.FuncSettle)

	capability(wasmabi.FuncHTTPGet, flowtype.HTTPRead, httpGet)
	capability(wasmabi.FuncHTTPGetPinned, flowtype.HTTPReadPinned, httpGetPinned)
	capability(wasmabi.FuncHTTPDo, flowtype.HTTPWrite, httpDo)
	capability(wasmabi.FuncKVGet, flowtype.KVRead, kvGet)
	capability(wasmabi.FuncKVPut, flowtype.KVWrite, kvPut)
	capability(wasmabi.FuncBlobRead, flowtype.BlobRead, blobRead)
	capability(wasmabi.FuncBlobWrite, flowtype.BlobWrite, blobWrite)
	capability(wasmabi.FuncDBQuery, flowtype.DBRead, dbQuery)
	capability(wasmabi.FuncDBExec, flowtype.DBWrite, dbExec)
	capability(wasmabi.FuncDedupe, flowtype.Dedupe, dedupe)
	capability(wasmabi.FuncSecret, flowtype.Secrets, secret)

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
		stack[0] = uint64(instanceOf(ctx).clockNow())
	}), nil, []api.ValueType{api.ValueTypeI64}).Export(wasmabi.FuncClockNow)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
		stack[0] = instanceOf(ctx).rngDraw()
	}), nil, []api.ValueType{api.ValueTypeI64}).Export(wasmabi.FuncRNG)
}

// declares reports whether the instance's connector declares c (or, for a
// capability that another one implies, that one).
func (inst *instance) declares(c flowtype.Capability) bool {
	caps := inst.m.info.Capabilities
	has := func(c flowtype.Capability) bool { return slices.Contains(caps, string(c)) }
	switch c {
	case flowtype.BlobRead:
		return has(flowtype.BlobRead) || has(flowtype.BlobReadHash)
	case flowtype.DBRead:
		return has(flowtype.DBRead) || has(flowtype.DBWrite)
	case flowtype.RNG:
		return has(flowtype.RNG) || has(flowtype.RNGSeeded)
	}
	return has(c)
}

// serve runs one capability call and leaves its reply pending; it returns
// the reply's length.
func (inst *instance) serve(mod api.Module, name string, c flowtype.Capability, ptr, n uint32, fn capabilityFunc) uint32 {
	var w wasmabi.Writer
	w.Uint8(uint8(wasmabi.StatusOK))
	err := func() error {
		switch {
		case inst.act == nil:
			return runtime.Errorf(runtime.PolicyDenied, "%s called outside an activation", name)
		case !inst.declares(c):
			inst.m.host.report(inst, EventCapability, fmt.Sprintf("%s: capability %s is not declared", name, c))
			return runtime.Errorf(runtime.PolicyDenied, "capability %s is not declared", c)
		case n > wasmabi.MaxMessage:
			inst.m.host.report(inst, EventCapability, fmt.Sprintf("%s: a request of %d bytes", name, n))
			return runtime.Errorf(runtime.PolicyDenied, "a %s request of %d bytes exceeds the %d a module may send", name, n, wasmabi.MaxMessage)
		}
		view, ok := mod.Memory().Read(ptr, n)
		if !ok {
			return runtime.Errorf(runtime.Permanent, "%s: the request is outside the module's memory", name)
		}
		err := fn(inst, inst.act.rc, slices.Clone(view), &w)
		if runtime.KindOf(err) == runtime.PolicyDenied {
			inst.m.host.report(inst, EventCapability, fmt.Sprintf("%s: %v", name, err))
		}
		return err
	}()
	if err == nil && len(w.Bytes()) > wasmabi.MaxMessage {
		err = runtime.Errorf(runtime.PolicyDenied, "a %s reply of %d bytes exceeds the %d a module may receive", name, len(w.Bytes()), wasmabi.MaxMessage)
	}
	if err != nil {
		w.Reset()
		w.Uint8(uint8(wasmabi.StatusError))
		w.AppendError(wasmabi.ErrorOf(err))
	}
	inst.pending = w.Bytes()
	return uint32(len(inst.pending))
}

// reply copies the pending reply into the module's buffer at ptr.
func (inst *instance) reply(mod api.Module, ptr uint32) {
	mod.Memory().Write(ptr, inst.pending)
	inst.pending = nil
}

func writeHTTP(w *wasmabi.Writer, resp *runtime.HTTPResponse, err error) error {
	if err != nil {
		return err
	}
	s := wasmabi.HTTPResponse{Status: uint32(resp.Status), Header: resp.Header, Body: resp.Body}
	s.Append(w)
	return nil
}

// readRequest decodes a read's request and refuses one that is not a GET
// or asks the server to treat it as another method.
func readRequest(inst *instance, req []byte) (wasmabi.HTTPRequest, error) {
	q, err := wasmabi.ReadHTTPRequest(req)
	if err != nil {
		return q, runtime.NewError(runtime.Permanent, err)
	}
	if q.Method != http.MethodGet {
		inst.m.host.report(inst, EventCapability, fmt.Sprintf("a read sent as %s %s", q.Method, q.URL))
		return q, runtime.Errorf(runtime.PolicyDenied, "a read is a GET, not %s", q.Method)
	}
	for k := range q.Header {
		if slices.Contains(methodOverrides, http.CanonicalHeaderKey(k)) {
			inst.m.host.report(inst, EventCapability, fmt.Sprintf("a read of %s asks, in header %s, to be %s", q.URL, k, strings.Join(q.Header[k], ",")))
			return q, runtime.Errorf(runtime.PolicyDenied, "a read may not ask to be another method (header %s)", k)
		}
	}
	return q, nil
}

func httpGet(inst *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	q, err := readRequest(inst, req)
	if err != nil {
		return err
	}
	h := rc.Caps().HTTPRead
	if h == nil {
		return runtime.NotGranted(string(flowtype.HTTPRead))
	}
	resp, err := h.Get(rc, q.URL, q.Header)
	return writeHTTP(w, resp, err)
}

func httpGetPinned(inst *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	q, err := readRequest(inst, req)
	if err != nil {
		return err
	}
	h := rc.Caps().HTTPPinned
	if h == nil {
		return runtime.NotGranted(string(flowtype.HTTPReadPinned))
	}
	resp, err := h.GetPinned(rc, q.URL, q.Pin, q.Header)
	return writeHTTP(w, resp, err)
}

func httpDo(_ *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	q, err := wasmabi.ReadHTTPRequest(req)
	if err != nil {
		return runtime.NewError(runtime.Permanent, err)
	}
	h := rc.Caps().HTTPWrite
	if h == nil {
		return runtime.NotGranted(string(flowtype.HTTPWrite))
	}
	resp, err := h.Do(rc, q.Method, q.URL, q.Header, q.Body)
	return writeHTTP(w, resp, err)
}

// fields decodes a request of n strings or byte strings.
func fields(req []byte, read func(r *wasmabi.Reader)) error {
	r := wasmabi.NewReader(req)
	read(r)
	if err := r.Done(); err != nil {
		return runtime.NewError(runtime.Permanent, err)
	}
	return nil
}

func kvGet(_ *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	var key string
	if err := fields(req, func(r *wasmabi.Reader) { key = r.String() }); err != nil {
		return err
	}
	kv := rc.Caps().KVRead
	if kv == nil {
		return runtime.NotGranted(string(flowtype.KVRead))
	}
	v, ok, err := kv.Get(rc, key)
	if err != nil {
		return err
	}
	w.Bool(ok)
	w.ByteString(v)
	return nil
}

func kvPut(_ *instance, rc *runtime.Context, req []byte, _ *wasmabi.Writer) error {
	var key string
	var value []byte
	if err := fields(req, func(r *wasmabi.Reader) { key, value = r.String(), r.ByteString() }); err != nil {
		return err
	}
	kv := rc.Caps().KVWrite
	if kv == nil {
		return runtime.NotGranted(string(flowtype.KVWrite))
	}
	return kv.Put(rc, key, value)
}

func blobRead(_ *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	var name string
	if err := fields(req, func(r *wasmabi.Reader) { name = r.String() }); err != nil {
		return err
	}
	b := rc.Caps().BlobRead
	if b == nil {
		return runtime.NotGranted(string(flowtype.BlobRead))
	}
	data, err := b.ReadBlob(rc, name)
	if err != nil {
		return err
	}
	w.ByteString(data)
	return nil
}

func blobWrite(_ *instance, rc *runtime.Context, req []byte, _ *wasmabi.Writer) error {
	var name string
	var data []byte
	if err := fields(req, func(r *wasmabi.Reader) { name, data = r.String(), r.ByteString() }); err != nil {
		return err
	}
	b := rc.Caps().BlobWrite
	if b == nil {
		return runtime.NotGranted(string(flowtype.BlobWrite))
	}
	return b.WriteBlob(rc, name, data)
}

func dedupe(_ *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	var key string
	var ttl int64
	if err := fields(req, func(r *wasmabi.Reader) { key, ttl = r.String(), r.Int64() }); err != nil {
		return err
	}
	d := rc.Caps().Dedupe
	if d == nil {
		return runtime.NotGranted(string(flowtype.Dedupe))
	}
	absent, err := d.PutIfAbsent(rc, key, time.Duration(ttl))
	if err != nil {
		return err
	}
	w.Bool(absent)
	return nil
}

func secret(inst *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	var handle string
	if err := fields(req, func(r *wasmabi.Reader) { handle = r.String() }); err != nil {
		return err
	}
	s := rc.Caps().Secrets
	if s == nil {
		return runtime.NotGranted(string(flowtype.Secrets))
	}
	if !slices.Contains(inst.m.info.Secrets, handle) {
		return runtime.Errorf(runtime.PolicyDenied, "secret handle %q is not one %s declares", handle, inst.m.info.ID)
	}
	v, err := s.Secret(rc, handle)
	if err != nil {
		return err
	}
	inst.act.secrets = append(inst.act.secrets, v)
	w.String(v)
	return nil
}

// QueryRowsFunc runs a module's read query on the activation's database
// read capability and returns its rows whole, so that they cross to the
// module in one reply. Options.QueryRows lets the capability's owner run
// it its own way (engine.Engine runs the queries of a connector that may
// only read in a read-only transaction); by default it is db's
// QueryContext, every row read.
type QueryRowsFunc func(ctx context.Context, db runtime.DBReader, query string, args ...any) (columns []string, rows [][]any, err error)

func dbQuery(in *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	q, err := wasmabi.ReadDBRequest(req)
	if err != nil {
		return runtime.NewError(runtime.Permanent, err)
	}
	d := rc.Caps().DBRead
	if d == nil {
		return runtime.NotGranted(string(flowtype.DBRead))
	}
	var rows wasmabi.Rows
	if rows.Columns, rows.Values, err = in.m.host.queryRows(rc, d, q.Query, q.Args...); err != nil {
		return err
	}
	if err := rows.Append(w); err != nil {
		return runtime.NewError(runtime.Permanent, err)
	}
	return nil
}

// QueryRows is the default QueryRowsFunc: db's QueryContext, every row
// read.
func QueryRows(ctx context.Context, db runtime.DBReader, query string, args ...any) ([]string, [][]any, error) {
	rs, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	return ScanAll(rs)
}

// ScanAll reads every row of rs and closes it; values are what the
// driver returned ([]byte copied). Past wasmabi.MaxMessage bytes of rows,
// counted as the host holds them, it stops with PolicyDenied.
func ScanAll(rs *sql.Rows) ([]string, [][]any, error) {
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out [][]any
	size := 0
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		for _, v := range row {
			if b, ok := v.([]byte); ok {
				size += len(b)
			}
			if s, ok := v.(string); ok {
				size += len(s)
			}
		}
		// What a row holds in the host, not only its values: a query of no
		// columns still costs a slice per row.
		if size += 32 + 24*len(row); size > wasmabi.MaxMessage {
			return nil, nil, runtime.Errorf(runtime.PolicyDenied, "the query's rows exceed the %d bytes a module may receive", wasmabi.MaxMessage)
		}
		out = append(out, row)
	}
	return cols, out, rs.Err()
}

func dbExec(_ *instance, rc *runtime.Context, req []byte, w *wasmabi.Writer) error {
	q, err := wasmabi.ReadDBRequest(req)
	if err != nil {
		return runtime.NewError(runtime.Permanent, err)
	}
	d := rc.Caps().DBWrite
	if d == nil {
		return runtime.NotGranted(string(flowtype.DBWrite))
	}
	res, err := d.ExecContext(rc, q.Query, q.Args...)
	if err != nil {
		return err
	}
	var s wasmabi.ExecResult
	if n, err := res.RowsAffected(); err == nil {
		s.RowsAffected, s.HasRowsAffected = n, true
	}
	if id, err := res.LastInsertId(); err == nil {
		s.LastInsertID, s.HasLastInsertID = id, true
	}
	s.Append(w)
	return nil
}

// clockNow is the clock capability: the host's clock as granted, in Unix
// nanoseconds, later by what the module's sleeps did not wait (so that a
// sleep moves it as a real one would); zero when the activation holds
// none.
func (inst *instance) clockNow() int64 {
	if inst.act == nil || !inst.declares(flowtype.Clock) {
		return 0
	}
	if c := inst.act.rc.Caps().Clock; c != nil {
		return c.Now().UnixNano() + inst.skipped
	}
	return 0
}

// rngDraw is the rng capability as granted; zero when the activation
// holds none.
func (inst *instance) rngDraw() uint64 {
	if inst.act == nil || !inst.declares(flowtype.RNG) {
		return 0
	}
	if r := inst.act.rc.Caps().RNG; r != nil {
		return r.Uint64()
	}
	return 0
}
