//go:build wasip1

package wasmguest

import (
	"fmt"
	goruntime "runtime"
	"time"
	"unsafe"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// served is what Serve was given.
var served struct {
	node runtime.Runner
	caps runtime.Capabilities
}

// request and response are the buffers of the call in progress: the host
// writes a request into request (flowgen_alloc), and reads the response
// from response after flowgen_run returns.
var (
	request  []byte
	response wasmabi.Writer
)

// Serve makes node the module's connector, running with caps: each
// non-nil field a proxy of this package. setup runs once, before any
// activation (OpenDB for a connector with a database). Call Serve once,
// from an init function of the module's main package.
//
// Serve names no proxy itself: a module links the host functions of the
// proxies its main package names and no others, even when its code
// calls methods by reflection.
func Serve(node runtime.Runner, caps runtime.Capabilities, setup ...func()) {
	served.node, served.caps = node, caps
	time.Local = time.UTC
	goruntime.MemProfileRate = 0
	if err := findRandState(); err != nil {
		panic("wasmguest: " + err.Error())
	}
	for _, s := range setup {
		s()
	}
}

//go:wasmexport flowgen_abi_version
func abiVersion() uint32 { return wasmabi.Version }

// flowgen_alloc makes the request buffer hold at least n bytes; the host
// writes requests that fit into it without calling again, so it is never
// replaced but here.
//
//go:wasmexport flowgen_alloc
func alloc(n uint32) unsafe.Pointer {
	if cap(request) < int(n) || cap(request) == 0 {
		request = make([]byte, max(n, 1))
	}
	request = request[:cap(request)]
	return unsafe.Pointer(unsafe.SliceData(request))
}

//go:wasmexport flowgen_run
func run(n uint32) uint64 {
	resp := activate(request[:min(int(n), len(request))])
	response.Reset()
	resp.Append(&response)
	out := response.Bytes()
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | uint64(len(out))
}

// activate runs one activation.
func activate(p []byte) (resp wasmabi.RunResponse) {
	q, err := wasmabi.ReadRunRequest(p)
	if err != nil {
		return wasmabi.RunResponse{Err: &wasmabi.Error{Kind: runtime.Permanent, Message: err.Error()}}
	}
	if served.node == nil {
		return wasmabi.RunResponse{Err: &wasmabi.Error{Kind: runtime.Permanent, Message: "the module's main package never called wasmguest.Serve"}}
	}
	reseed(&q.Rand)
	before := goruntime.NumGoroutine()
	ctx := newCallContext()
	out, err := call(runtime.NewActivationContext(ctx, q.Key, int(q.Attempt), served.caps, heartbeat{}, time.Time{}), q.Params, q.Input)
	ctx.end()
	// The activation is over when nothing it started can still run: the
	// timers it left fire now, in the module's virtual time, with its
	// capabilities still bound (wasmabi.SettleSpan).
	hostSettle(1)
	time.Sleep(wasmabi.SettleSpan)
	hostSettle(0)
	// Goroutines that end when the activation's context does (database
	// rows waiting on it, say) get to run and end before they count.
	for i := 0; i < 16 && goruntime.NumGoroutine() > before; i++ {
		goruntime.Gosched()
	}
	if left := goruntime.NumGoroutine() - before; left > 0 {
		resp.Goroutines = uint32(left)
	}
	if err != nil {
		e := wasmabi.ErrorOf(err)
		resp.Err = &e
		return resp
	}
	if len(out) > wasmabi.MaxMessage {
		resp.Err = &wasmabi.Error{Kind: runtime.PolicyDenied, Message: fmt.Sprintf("an output of %d bytes exceeds the %d a module may return", len(out), wasmabi.MaxMessage)}
		return resp
	}
	resp.Output = out
	return resp
}

// call runs the node, turning a panic into a Permanent error.
func call(ctx *runtime.Context, params, input []byte) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, runtime.Errorf(runtime.Permanent, "panic: %v", p)
		}
	}()
	return served.node.Run(ctx, params, input)
}

// heartbeat tells the host the activation is alive.
type heartbeat struct{}

func (heartbeat) Add(int64) int64 {
	hostHeartbeat()
	return 0
}

//go:wasmimport flowgen heartbeat
func hostHeartbeat()

//go:wasmimport flowgen settle
func hostSettle(on uint32)

//go:wasmimport flowgen reply
func hostReply(buf unsafe.Pointer)

// hostCall calls a capability's host function with req and returns a
// reader positioned after the reply's status, or the host's error.
func hostCall(fn func(unsafe.Pointer, uint32) uint32, req []byte) (*wasmabi.Reader, error) {
	n := fn(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)))
	goruntime.KeepAlive(req)
	reply := make([]byte, n)
	if n > 0 {
		hostReply(unsafe.Pointer(unsafe.SliceData(reply)))
	}
	r := wasmabi.NewReader(reply)
	switch st := wasmabi.Status(r.Uint8()); st {
	case wasmabi.StatusOK:
		return r, nil
	case wasmabi.StatusError:
		e := r.Error()
		if r.Err() != nil {
			return nil, runtime.NewError(runtime.Permanent, r.Err())
		}
		return nil, e.Err()
	default:
		return nil, runtime.Errorf(runtime.Permanent, "wasmguest: reply status %d", st)
	}
}

// done checks that r read its whole reply.
func done(r *wasmabi.Reader) error {
	if err := r.Done(); err != nil {
		return runtime.NewError(runtime.Permanent, fmt.Errorf("host reply: %w", err))
	}
	return nil
}
