// Package abuse is a hostile connector for the confinement tests: it
// abuses WASI and the flowgen ABI directly, as its input says (floods of
// output, of iovecs and of refused calls, memory it keeps, polls without
// a clock, goroutines it leaves).
package abuse
