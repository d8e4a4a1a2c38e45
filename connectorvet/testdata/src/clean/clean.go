package clean

import (
	"context"
	"maps"
	"slices"
	"strings"
)

// Effects is Pure.
const Effects = 0

// Join is deterministic: sorted keys, no clocks, no I/O.
func Join(m map[string]string) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sb.WriteString(k + "=" + m[k])
	}
	return sb.String()
}

// Sleep waits for d or cancellation: a select that only races ctx.Done()
// is deterministic.
func Sleep(ctx context.Context, d <-chan int) {
	select {
	case <-ctx.Done():
	case <-d:
	}
}
