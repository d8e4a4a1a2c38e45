package localrun

import (
	"runtime/debug"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime/engine"
)

// TestProgramsTuneTheCollector: flowgen's programs run with the runtime's
// collector settings, and the environment's GOGC and GOMEMLIMIT win.
func TestProgramsTuneTheCollector(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) })

	tuneGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != engine.ProgramGCPercent {
		t.Errorf("GC percent %d, want %d", got, engine.ProgramGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != engine.ProgramMemoryLimit {
		t.Errorf("memory limit %d, want %d", got, engine.ProgramMemoryLimit)
	}

	debug.SetGCPercent(123)
	debug.SetMemoryLimit(456 << 20)
	tuneGC(func(name string) string { return map[string]string{"GOGC": "123", "GOMEMLIMIT": "456MiB"}[name] })
	if got := debug.SetGCPercent(100); got != 123 {
		t.Errorf("with GOGC set the percent became %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 456<<20 {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}
}
