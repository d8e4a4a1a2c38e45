package wasmhost

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
)

// TestRedactionAcrossLineCut: a line too long for one log line is cut so
// that a secret is never split between two, where neither half would be
// redacted.
func TestRedactionAcrossLineCut(t *testing.T) {
	const secret = "sk_live_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, at := range []int{maxLine - 10, maxLine - len(secret), maxLine - 1, maxLine, 2*maxLine - 5} {
		var logged strings.Builder
		h := &Host{log: slog.New(slog.NewTextHandler(&logged, nil))}
		inst := &instance{m: &Module{host: h, info: runtime.NodeInfo{ID: "test.redact"}}}
		inst.output = newOutput(inst)
		inst.act = &activation{rc: runtime.NewActivationContext(context.Background(), "k", 1, runtime.Capabilities{}, nil, time.Time{}), secrets: []string{secret}}
		line := strings.Repeat(".", at) + secret + strings.Repeat(".", 100) + "\n"
		if _, err := inst.output.stdout().Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		inst.output.flush()
		out := logged.String()
		if strings.Contains(out, secret[:10]) || strings.Contains(out, secret[10:]) || strings.Count(out, "[redacted secret]") != 1 {
			t.Errorf("secret at byte %d of a %d-byte line: logged\n%s", at, len(line), out)
		}
	}
}
