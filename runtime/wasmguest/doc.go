// Package wasmguest runs a connector inside its confined WebAssembly
// module (GOOS=wasip1 GOARCH=wasm, built by package wasmbuild). The main
// package flowgen generates for the module calls Serve with the
// connector's node and a runtime.Capabilities whose fields are this
// package's proxies for the capabilities the spec declares, and nothing
// else; each proxy calls the host function of its capability
// (wasmabi.Imports), so the module imports exactly those.
//
// Serve also makes the module deterministic where Go would not be: the
// runtime's own random state (map iteration order, select, math/rand/v2's
// global source) is reseeded for every activation from the seed the host
// derives from the activation, so that it depends on the activation and
// not on what the instance ran before; the local time zone is UTC; memory
// profiling, which samples allocations at random, is off.
//
// Nothing here is trusted by the host. The connector's code shares the
// module with this package and may rewrite any of it; what it can reach
// is decided by the host (runtime/wasmhost), which offers only the
// declared capabilities and checks every call.
//
// Outside wasip1 the package holds only this documentation.
package wasmguest
