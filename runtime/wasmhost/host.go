// Package wasmhost runs confined connectors: WebAssembly modules (wasip1
// reactors built by package wasmbuild) under wazero, whose only way out
// is a host function for each capability the connector's spec declares.
//
// What a module can reach is decided here, never by the module:
//
//   - Imports. A module may import the WASI functions (implemented below
//     with no environment, no arguments, no sockets and no files) and, from
//     module "flowgen", the host functions of the capabilities its
//     NodeInfo declares plus the plumbing every module needs. Any other
//     import refuses the module at Load, naming it.
//   - Capabilities. Each host function calls the capability the engine
//     granted the activation (engine.Grants): the HTTP capability enforces
//     the egress allowlist on every request and redirect, a read refuses
//     a request that asks to be another method, a db.read-only connector's
//     queries run in a read-only transaction, secrets resolve only the
//     handles the spec declares.
//   - Files. The module sees one directory, "/", that holds nothing: every
//     open, stat or change is refused with "permission denied" and
//     reported (Options.Report), so an attempt never goes unnoticed.
//   - Time and randomness. The module's wall clock is the activation's
//     logical time (runtime.Context.LogicalTime: fixed when the activation
//     was published, the same on every attempt and replay) plus the time
//     the module itself slept; its monotonic clock advances only when it
//     sleeps; its random source (random_get) and the Go runtime's own
//     random state are seeded from the activation (its idempotency key, or
//     its connector, params and input), so map iteration order is a
//     function of the input. The real clock and an unseeded source exist
//     only as the clock and rng capabilities, when declared.
//   - Resources. Each call has the activation's deadline, after which the
//     module is stopped (wazero's close on context done); a memory limit;
//     and a limit on what crosses the boundary (wasmabi.MaxMessage).
//
// A module compiles once per Host (and once per machine with a compilation
// cache directory); instances are pooled per Module and run one
// activation at a time. An instance whose call failed in the module (a
// trap, an exit, a deadline) or that left goroutines running after Run
// returned is closed, never reused.
package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmabi"
)

// Options configure a Host; the zero value is usable.
type Options struct {
	// CacheDir keeps compiled modules across processes; empty compiles
	// every module once per Host.
	CacheDir string
	// MemoryLimit bounds one instance's memory, in bytes (default 256 MiB).
	MemoryLimit uint64
	// PoolSize bounds the idle instances kept per module (default 16).
	PoolSize int
	// PoolMemoryLimit bounds the memory of an instance kept idle: one
	// whose memory grew past it in an activation is closed when the
	// activation ends, so that a burst of large activations does not
	// leave the pool holding their memory (default 64 MiB).
	PoolMemoryLimit uint64
	// Logger receives what modules write to standard output and error,
	// a line at a time, with the values of the activation's secrets and
	// classified input fields replaced; slog.Default() when nil.
	Logger *slog.Logger
	// Report receives every attempt a module made to reach what it may
	// not (Event); when nil they are logged at warning level.
	Report func(Event)
	// Output, when set, receives each line a module writes, unredacted,
	// instead of the Logger (certification reads it to find leaks). key
	// is the running activation's idempotency key.
	Output func(connector, key string, s Stream, line []byte)
	// QueryRows runs the read queries of modules (QueryRows when nil).
	QueryRows QueryRowsFunc
	// VirtualSleep makes a module's sleeps advance its clocks without
	// waiting. A module cannot tell (its clocks, the clock capability's
	// included, move by what it slept either way); certification uses it, so that a connector's own backoff
	// costs no time. Production leaves it off: a sleep there paces real
	// requests to a real provider.
	VirtualSleep bool
}

const (
	defaultMemoryLimit = 256 << 20
	defaultPoolSize    = 16
	// defaultPoolMemoryLimit is eight times what an instance of a small
	// connector holds (7.8 MiB, BenchmarkConfinedModule).
	defaultPoolMemoryLimit = 64 << 20
	pageSize               = 64 << 10
)

// Host runs confined modules. It is safe for concurrent use.
type Host struct {
	opts  Options
	rt    wazero.Runtime
	cache wazero.CompilationCache
	log   *slog.Logger

	mu      sync.Mutex
	modules map[string]*compiled // by digest
}

// compiled is a module compiled once per Host, shared by every Module
// loaded from the same bytes.
type compiled struct {
	mod    wazero.CompiledModule
	digest string
}

// New starts a host.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = defaultMemoryLimit
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = defaultPoolSize
	}
	if opts.PoolMemoryLimit == 0 {
		opts.PoolMemoryLimit = defaultPoolMemoryLimit
	}
	if opts.QueryRows == nil {
		opts.QueryRows = QueryRows
	}
	h := &Host{opts: opts, log: opts.Logger, modules: map[string]*compiled{}}
	if h.log == nil {
		h.log = slog.Default()
	}
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32(opts.MemoryLimit / pageSize))
	if opts.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmhost: compilation cache %s: %w", opts.CacheDir, err)
		}
		h.cache = cache
		cfg = cfg.WithCompilationCache(cache)
	}
	h.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := h.instantiateHostModules(ctx); err != nil {
		h.rt.Close(ctx)
		return nil, err
	}
	return h, nil
}

func (h *Host) queryRows(ctx context.Context, db runtime.DBReader, query string, args ...any) ([]string, [][]any, error) {
	return h.opts.QueryRows(ctx, db, query, args...)
}

// Close stops every instance and frees the compiled modules.
func (h *Host) Close(ctx context.Context) error {
	err := h.rt.Close(ctx)
	if h.cache != nil {
		err = errors.Join(err, h.cache.Close(ctx))
	}
	return err
}

// instantiateHostModules registers WASI (with the host's file system and
// exit handling) and the flowgen capability functions.
func (h *Host) instantiateHostModules(ctx context.Context) error {
	wasi := h.rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(wasi)
	if _, err := wasi.Instantiate(ctx); err != nil {
		return fmt.Errorf("wasmhost: WASI: %w", err)
	}
	b := h.rt.NewHostModuleBuilder(wasmabi.Module)
	exportHostFunctions(b)
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("wasmhost: host functions: %w", err)
	}
	return nil
}

// LoadError is a module the host refuses to run; Problems names each
// reason.
type LoadError struct {
	Connector string
	Problems  []string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("wasmhost: module of %s refused:\n  %s", e.Connector, strings.Join(e.Problems, "\n  "))
}

// Load compiles wasm (once per Host for the same bytes) as the module of
// the connector info describes, and checks it: its digest must be digest
// when digest is not empty, it must import nothing but WASI and the host
// functions of the capabilities info declares, export the ABI's
// functions, and speak this ABI version. info is trusted: it must come
// from the connector's certified spec, never from the module.
func (h *Host) Load(ctx context.Context, wasm []byte, info runtime.NodeInfo, digest string) (*Module, error) {
	got := Digest(wasm)
	if digest != "" && got != digest {
		return nil, &LoadError{Connector: info.ID, Problems: []string{fmt.Sprintf("the module is %s, but %s was certified: these are not the certified bytes", got, digest)}}
	}
	c, err := h.compile(ctx, wasm, got)
	if err != nil {
		return nil, &LoadError{Connector: info.ID, Problems: []string{"it does not compile: " + err.Error()}}
	}
	if problems := checkInterface(c.mod, info); len(problems) > 0 {
		return nil, &LoadError{Connector: info.ID, Problems: problems}
	}
	m := &Module{host: h, compiled: c, info: info, size: h.opts.PoolSize}
	inst, err := m.instantiate(ctx)
	if err != nil {
		return nil, &LoadError{Connector: info.ID, Problems: []string{"it does not start: " + err.Error()}}
	}
	if problems := checkVersion(ctx, inst); len(problems) > 0 {
		inst.close(ctx)
		return nil, &LoadError{Connector: info.ID, Problems: problems}
	}
	m.release(ctx, inst)
	return m, nil
}

func (h *Host) compile(ctx context.Context, wasm []byte, digest string) (*compiled, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.modules[digest]; ok {
		return c, nil
	}
	mod, err := h.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	c := &compiled{mod: mod, digest: digest}
	h.modules[digest] = c
	return c, nil
}

// allowedImports are the host functions a module declaring info's
// capabilities may import from module "flowgen".
func allowedImports(info runtime.NodeInfo) []string {
	allowed := slices.Clone(wasmabi.Plumbing)
	for _, c := range info.Capabilities {
		allowed = append(allowed, wasmabi.Imports(flowtype.Capability(c))...)
	}
	return allowed
}

// checkInterface refuses imports outside WASI and the declared
// capabilities, and a module without the ABI's exports.
func checkInterface(mod wazero.CompiledModule, info runtime.NodeInfo) []string {
	allowed := allowedImports(info)
	var problems []string
	for _, f := range mod.ImportedFunctions() {
		module, name, _ := f.Import()
		switch {
		case module == wasi_snapshot_preview1.ModuleName:
		case module == wasmabi.Module && slices.Contains(allowed, name):
		case module == wasmabi.Module && capabilityOf(name) != "":
			problems = append(problems, fmt.Sprintf("it imports %s.%s, the host function of capability %s, which the spec does not declare", module, name, capabilityOf(name)))
		default:
			problems = append(problems, fmt.Sprintf("it imports %s.%s, which no host offers", module, name))
		}
	}
	for _, kind := range []struct {
		what string
		n    int
	}{{"memories", len(mod.ImportedMemories())}} {
		if kind.n > 0 {
			problems = append(problems, fmt.Sprintf("it imports %d %s", kind.n, kind.what))
		}
	}
	exports := mod.ExportedFunctions()
	for _, name := range []string{"_initialize", wasmabi.ExportAlloc, wasmabi.ExportRun, wasmabi.ExportVersion} {
		if _, ok := exports[name]; !ok {
			problems = append(problems, fmt.Sprintf("it does not export %s: it was not built by flowgen's wasmbuild", name))
		}
	}
	return problems
}

// capabilityOf is the capability whose host function name is, or "".
func capabilityOf(name string) flowtype.Capability {
	for _, c := range flowtype.Capabilities {
		if slices.Contains(wasmabi.Imports(c.Name), name) {
			return c.Name
		}
	}
	return ""
}

func checkVersion(ctx context.Context, inst *instance) []string {
	res, err := inst.mod.ExportedFunction(wasmabi.ExportVersion).Call(ctx)
	if err != nil {
		return []string{"its ABI version cannot be read: " + err.Error()}
	}
	if v := api.DecodeU32(res[0]); v != wasmabi.Version {
		return []string{fmt.Sprintf("it speaks ABI version %d; this host speaks %d", v, wasmabi.Version)}
	}
	return nil
}

// Compile compiles wasm into the host's compilation cache (its CacheDir),
// running none of it: certification compiles a module once, outside the
// runs that execute it.
func (h *Host) Compile(ctx context.Context, wasm []byte) error {
	_, err := h.compile(ctx, wasm, Digest(wasm))
	return err
}
