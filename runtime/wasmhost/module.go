package wasmhost

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// Digest is "sha256:" and the hex SHA-256 of a module's bytes, the name
// certification gives a module.
func Digest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Module is a loaded module: a connector that runs confined. It is safe
// for concurrent use; each activation runs in an instance of its own.
type Module struct {
	host     *Host
	compiled *compiled
	info     runtime.NodeInfo

	mu   sync.Mutex
	idle []*instance // the most recently used last
	size int         // the most idle instances kept
	shut bool        // Close was called
}

// Digest is the module's digest.
func (m *Module) Digest() string { return m.compiled.digest }

// Info is the connector's declaration the module was loaded with.
func (m *Module) Info() runtime.NodeInfo { return m.info }

// Runner is the module as a node: each Run is one activation in a pooled
// instance, its capabilities those the activation's Context holds.
func (m *Module) Runner() runtime.Runner { return runner{m} }

type runner struct{ m *Module }

func (r runner) Info() runtime.NodeInfo { return r.m.info }

func (r runner) Run(ctx *runtime.Context, params, input json.RawMessage) (json.RawMessage, error) {
	return r.m.run(ctx, params, input)
}

// startupTimeout bounds an instance's start (the Go runtime's and the
// packages' initialization).
const startupTimeout = 30 * time.Second

// initialMono is the monotonic clock of a new instance: not zero, so that
// no computation on it starts at an edge.
const initialMono = int64(time.Second)

// instance is one running copy of a module. It runs one call at a time;
// the fields below the line change per call.
type instance struct {
	m     *Module
	mod   api.Module
	alloc api.Function
	run   api.Function
	dead  bool
	// uses counts the activations the instance served; it is closed at
	// wasmabi.InstanceActivations.
	uses int
	// rootOpened is set once the host opened the module's root directory
	// for it (tripwire).
	rootOpened bool
	// bufPtr and bufCap are the module's request buffer, as far as the
	// host knows it holds (the size it last asked for).
	bufPtr, bufCap uint32

	act     *activation
	mono    int64         // the module's monotonic clock, in nanoseconds
	wall    int64         // the module's wall clock at callMono, Unix nanoseconds
	callAt  int64         // mono when the call began
	skipped int64         // what the activation's sleeps did not wait (Options.VirtualSleep): the clock capability reads that much later
	rng     *rand.ChaCha8 // behind random_get
	pending []byte        // the reply Reply copies
	output  *output       // standard output and error
	events  int           // reported in this activation (Host.report)
	// startDone is the instantiation's deadline while the module
	// initializes (nil after).
	startDone <-chan struct{}
	// settling is set while the module settles after Run
	// (wasmabi.SettleSpan); waits counts its sleeps meanwhile, and
	// unsettled is set when they passed wasmabi.SettleWaits.
	settling  bool
	waits     int
	unsettled bool
	// lastWait is the settling module's latest sleep: when settling ends,
	// it was the settling sleep itself, which takes back the time it
	// added, so that the module's clock stays near what it lived.
	lastWait int64
}

// activation is the call in progress in an instance.
type activation struct {
	rc      *runtime.Context
	input   []byte
	secrets []string // values the activation's secrets resolved to
	// sensitive caches instance.sensitive, worked out when secrets had
	// sensitiveSecrets values.
	sensitive        []sensitiveValue
	sensitiveSecrets int
}

type instanceKey struct{}

// instanceOf is the instance whose call ctx is.
func instanceOf(ctx context.Context) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	return inst
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	inst := &instance{m: m, mono: initialMono, rng: rand.NewChaCha8([32]byte{})}
	inst.output = newOutput(inst)
	fsys := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(tripwire{inst}, "/")
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions("_initialize").
		WithWalltime(inst.walltime, sys.ClockResolution(1)).
		WithNanotime(inst.nanotime, sys.ClockResolution(1)).
		WithNanosleep(inst.nanosleep).
		WithRandSource(inst).
		WithStdout(inst.output.stdout()).
		WithStderr(inst.output.stderr()).
		WithFSConfig(fsys)
	ictx, cancel := context.WithTimeout(context.WithValue(ctx, instanceKey{}, inst), startupTimeout)
	defer cancel()
	inst.startDone = ictx.Done()
	mod, err := m.host.rt.InstantiateModule(ictx, m.compiled.mod, cfg)
	inst.startDone = nil
	inst.output.flush()
	m.host.reportSuppressed(inst)
	if err != nil {
		return nil, describeExit(err)
	}
	inst.mod = mod
	inst.alloc = mod.ExportedFunction(wasmabi.ExportAlloc)
	inst.run = mod.ExportedFunction(wasmabi.ExportRun)
	return inst, nil
}

func (inst *instance) close(ctx context.Context) {
	inst.dead = true
	if inst.mod != nil {
		inst.mod.Close(ctx)
	}
}

// acquire takes the idle instance used last, or starts one: reusing the
// same few instances keeps their memory in the processor's caches, where
// taking them in turn would make every call start cold.
func (m *Module) acquire(ctx context.Context) (*instance, error) {
	m.mu.Lock()
	if n := len(m.idle); n > 0 {
		inst := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.mu.Unlock()
		return inst, nil
	}
	m.mu.Unlock()
	return m.instantiate(ctx)
}

// release keeps inst for the next activation, or closes it when it is
// dead, has served wasmabi.InstanceActivations, holds more memory than
// the pool keeps, the pool is full or the module closed.
func (m *Module) release(ctx context.Context, inst *instance) {
	if !inst.dead && inst.uses < wasmabi.InstanceActivations && uint64(inst.mod.Memory().Size()) <= m.host.opts.PoolMemoryLimit {
		m.mu.Lock()
		keep := !m.shut && len(m.idle) < m.size
		if keep {
			m.idle = append(m.idle, inst)
		}
		m.mu.Unlock()
		if keep {
			return
		}
	}
	inst.close(ctx)
}

// Idle is how many instances the pool keeps idle.
func (m *Module) Idle() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.idle)
}

// Warm starts instances until n are idle (at most the pool's size), so
// that the first activations do not wait for one to start; it returns the
// first start that fails (a module whose initialization fails fails
// here, before any activation).
func (m *Module) Warm(ctx context.Context, n int) error {
	for m.Idle() < min(n, m.size) {
		inst, err := m.instantiate(ctx)
		if err != nil {
			return fmt.Errorf("confined %s: %w", m.info.ID, err)
		}
		m.release(ctx, inst)
	}
	return nil
}

// Close closes the module's idle instances; instances running an
// activation close when it ends.
func (m *Module) Close(ctx context.Context) {
	m.mu.Lock()
	idle := m.idle
	m.idle, m.shut = nil, true
	m.mu.Unlock()
	for _, inst := range idle {
		inst.close(ctx)
	}
}

// seedOf derives an activation's random seed: from its idempotency key,
// or, for a connector without one, from the connector, params and input,
// so that the same activation draws the same numbers on every attempt.
func seedOf(info runtime.NodeInfo, key string, params, input []byte) [32]byte {
	h := sha256.New()
	if key != "" {
		h.Write([]byte("flowgen/seed/key\x00"))
		h.Write([]byte(key))
	} else {
		h.Write([]byte("flowgen/seed/input\x00"))
		for _, part := range [][]byte{[]byte(info.ID), []byte(info.Version), params, input} {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
	}
	var seed [32]byte
	h.Sum(seed[:0])
	return seed
}

// run is one activation in an instance.
func (m *Module) run(rc *runtime.Context, params, input []byte) (json.RawMessage, error) {
	inst, err := m.acquire(rc)
	if err != nil {
		return nil, runtime.Errorf(runtime.Transient, "confined %s: %v", m.info.ID, err)
	}
	inst.uses++
	defer m.release(rc, inst)
	seed := seedOf(m.info, rc.IdempotencyKey(), params, input)
	q := wasmabi.RunRequest{Key: rc.IdempotencyKey(), Attempt: uint32(max(rc.Attempt(), 0)), Params: params, Input: input}
	q.Rand = wasmabi.RandState(seed)
	var w wasmabi.Writer
	q.Append(&w)
	req := w.Bytes()
	if len(req) > wasmabi.MaxMessage {
		return nil, runtime.Errorf(runtime.PolicyDenied, "confined %s: params and input of %d bytes exceed the %d a module takes", m.info.ID, len(req), wasmabi.MaxMessage)
	}

	inst.begin(rc, input, seed)
	defer inst.end()
	ctx := context.WithValue(rc, instanceKey{}, inst)
	err = inst.writeRequest(ctx, req)
	var res []uint64
	if err == nil {
		res, err = inst.run.Call(ctx, uint64(len(req)))
	}
	if err != nil {
		inst.dead = true
		return nil, m.callError(rc, inst, err)
	}
	ptr, n := uint32(res[0]>>32), uint32(res[0])
	if n > wasmabi.MaxMessage {
		inst.dead = true
		return nil, runtime.Errorf(runtime.PolicyDenied, "confined %s: a response of %d bytes exceeds the %d a module may return", m.info.ID, n, wasmabi.MaxMessage)
	}
	raw, ok := inst.mod.Memory().Read(ptr, n)
	if !ok {
		inst.dead = true
		return nil, runtime.Errorf(runtime.Permanent, "confined %s: its response is outside its memory", m.info.ID)
	}
	resp, err := wasmabi.ReadRunResponse(raw)
	if err != nil {
		inst.dead = true
		return nil, runtime.Errorf(runtime.Permanent, "confined %s: %v", m.info.ID, err)
	}
	if resp.Goroutines > 0 {
		inst.dead = true
		m.host.report(inst, EventGoroutines, fmt.Sprintf("%d goroutine(s) still running after Run returned; the instance is closed and they never run again", resp.Goroutines))
	}
	if inst.unsettled {
		inst.dead = true
		m.host.report(inst, EventGoroutines, fmt.Sprintf("timers kept firing after Run returned (%d waits in %s of virtual time); the instance is closed and they never fire again", inst.waits, wasmabi.SettleSpan))
	}
	if resp.Err != nil {
		return nil, resp.Err.Err()
	}
	return json.RawMessage(append([]byte(nil), resp.Output...)), nil
}

// minRequestBuffer is the least request buffer the host asks a module
// for, so that requests of similar sizes reuse one.
const minRequestBuffer = 4 << 10

// writeRequest writes req into the module's request buffer, asking the
// module for a larger one first when it does not fit (wasmabi: the
// buffer is the module's until it gives another).
func (inst *instance) writeRequest(ctx context.Context, req []byte) error {
	if uint32(len(req)) > inst.bufCap {
		size := max(uint32(len(req)), minRequestBuffer)
		res, err := inst.alloc.Call(ctx, uint64(size))
		if err != nil {
			return err
		}
		inst.bufPtr, inst.bufCap = api.DecodeU32(res[0]), size
	}
	if !inst.mod.Memory().Write(inst.bufPtr, req) {
		return errors.New("the module's buffer is outside its memory")
	}
	return nil
}

// callError explains a call that failed in the module or was stopped.
func (m *Module) callError(rc *runtime.Context, inst *instance, err error) error {
	if rc.Err() != nil {
		return fmt.Errorf("confined %s stopped: %w", m.info.ID, context.Cause(rc))
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		m.host.report(inst, EventExit, fmt.Sprintf("the module exited with code %d", exit.ExitCode()))
		return runtime.Errorf(runtime.Permanent, "confined %s exited with code %d; the instance is closed", m.info.ID, exit.ExitCode())
	}
	return runtime.Errorf(runtime.Permanent, "confined %s crashed: %v", m.info.ID, describeExit(err))
}

// describeExit shortens wazero's errors to their first line.
func describeExit(err error) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("the module exited with code %d", exit.ExitCode())
	}
	return err
}

// begin sets the instance up for an activation: its clocks, its random
// source and what its output must not show.
func (inst *instance) begin(rc *runtime.Context, input []byte, seed [32]byte) {
	inst.act = &activation{rc: rc, input: input}
	inst.callAt = inst.mono
	inst.wall = rc.LogicalTime().UnixNano()
	inst.rng.Seed(seed)
	inst.settling, inst.waits, inst.unsettled, inst.lastWait = false, 0, false, 0
	inst.skipped = 0
}

func (inst *instance) end() {
	inst.output.flush()
	inst.m.host.reportSuppressed(inst)
	inst.act = nil
	inst.pending = nil
	inst.wall = 0
}

// walltime is the module's wall clock: the activation's logical time
// plus what the module slept since its call began (the Unix epoch
// outside a call).
func (inst *instance) walltime() (int64, int32) {
	t := inst.wall + inst.mono - inst.callAt
	return t / 1e9, int32(t % 1e9)
}

func (inst *instance) nanotime() int64 { return inst.mono }

// settle starts (on) or ends the module's settling after Run
// (wasmabi.SettleSpan): its sleeps meanwhile advance its clocks at once,
// and at the end the settling sleep's own time is taken back.
func (inst *instance) settle(on bool) {
	if inst.act == nil || on == inst.settling {
		return // only an activation settles
	}
	inst.settling = on
	if !on {
		inst.mono -= inst.lastWait
		inst.lastWait = 0
	}
}

// nanosleep sleeps as long as the module asked, or until its activation
// must stop, and advances its clocks by what it asked.
func (inst *instance) nanosleep(ns int64) {
	inst.mono += ns
	if ns <= 0 {
		return
	}
	if inst.settling {
		// Virtual time: timers fire at once. Past SettleWaits, time
		// jumps by the whole span, so that the settling sleep ends.
		inst.lastWait = ns
		if inst.waits++; inst.waits > wasmabi.SettleWaits && !inst.unsettled {
			inst.unsettled = true
			inst.mono += int64(wasmabi.SettleSpan)
			inst.lastWait += int64(wasmabi.SettleSpan)
		}
		return
	}
	if inst.m.host.opts.VirtualSleep && inst.act != nil {
		// The clock capability moves by what was skipped: a clock
		// that keeps its own time takes it (and its readings and what
		// it tells the provider agree), any other reads that much later.
		if c, ok := inst.act.rc.Caps().Clock.(interface{ Slept(time.Duration) bool }); !ok || !c.Slept(time.Duration(ns)) {
			inst.skipped += ns
		}
		return
	}
	// Sleep until the call's deadline at most: the activation's, or
	// the initialization's (a module that sleeps in a package init cannot
	// hold its start past startupTimeout, nor an activation that waits for
	// a new instance past its own deadline).
	var done <-chan struct{}
	switch {
	case inst.act != nil:
		done = inst.act.rc.Done()
	case inst.startDone != nil:
		done = inst.startDone
	default:
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

// Read is the module's random source (random_get).
func (inst *instance) Read(p []byte) (int, error) { return inst.rng.Read(p) }
