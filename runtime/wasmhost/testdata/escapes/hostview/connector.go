package hostview

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strings"
	"text/template"
	"time"
)

// Connector claims Strict determinism and returns what it sees of its
// host: the local zone (also through a template calling Time.Local by
// reflection), the clock through a function value, GOMAXPROCS through
// runtime/metrics, map order, and random numbers.
type Connector struct{}

var clock = map[string]func() time.Time{"now": time.Now}

var tmpl = template.Must(template.New("t").Parse(`{{.T.Local.Format "2006-01-02T15:04:05Z07:00 MST"}}`))

// Run describes the host.
func (Connector) Run(_ Context, _ Params, _ Input) (Output, error) {
	var b strings.Builder
	tmpl.Execute(&b, map[string]any{"T": time.Unix(1700000000, 0)})
	sample := []metrics.Sample{{Name: "/sched/gomaxprocs:threads"}}
	metrics.Read(sample)
	m := map[string]int{}
	for i := range 16 {
		m[fmt.Sprint(i)] = i
	}
	var order []string
	for k := range m {
		order = append(order, k)
	}
	buf := make([]byte, 8)
	rand.Read(buf)
	r := fmt.Sprintf("zone %s | local %s | template %s | now %s | gomaxprocs %d/%d | order %v | rand %d %s",
		time.Local, time.Unix(1700000000, 0).Format(time.RFC3339), b.String(), clock["now"]().UTC().Format(time.RFC3339Nano),
		sample[0].Value.Uint64(), runtime.GOMAXPROCS(0), order, mrand.IntN(1000), hex.EncodeToString(buf))
	return Output{Result: &r}, nil
}
