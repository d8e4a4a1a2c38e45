package protocol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// TestKeyLayout keeps the drawing in keys.go true: every key function is
// drawn, every drawn key comes from a function, and each returns what its
// line shows.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	var j runtype.JobID
	j[0] = 1
	root := "pid/" + j.String() + "/"
	msg := [16]byte{0xab}
	layout := map[string][]byte{
		"pid/<root>/meta":                MetaKey(j),
		"pid/<root>/status":              StatusKey(j),
		"pid/<root>/tomb":                TombKey(j),
		"pid/<root>/paused":              PausedKey(j),
		"pid/<root>/sem":                 SemKey(j),
		"pid/<root>/spent":               SpentKey(j),
		"pid/<root>/res/<act>":           ResultKey(j, "<act>"),
		"pid/<root>/fail/<act>":          FailKey(j, "<act>"),
		"pid/<root>/term/<act>":          TermKey(j, "<act>"),
		"pid/<root>/log/<act>/<n>":       AttemptLogKey(j, "<act>", 7),
		"pid/<root>/wait/<act>":          WaitKey(j, "<act>"),
		"pid/<root>/signal/<act>":        SignalKey(j, "<act>"),
		"pid/<root>/act/<act>":           ActivityKey(j, "<act>"),
		"pid/<root>/guid/<msg>":          GuidKey(j, msg),
		"pid/<root>/agg/<act>":           AggregateKey(j, "<act>"),
		"pid/<root>/agg/<act>/<shard>":   AggregateShardKey(j, "<act>", 5),
		"pid/<root>/items/<act>":         ItemsKey(j, "<act>"),
		"pid/<root>/sub/<act>":           SubflowChildKey(j, "<act>"),
		"pid/<root>/unserved/<act>":      UnservedKey(j, "<act>"),
		"pid/<root>/hist/<t>/<ev>/<act>": HistoryKey(j, time.Unix(0, 7), 8, "<ev>", "<act>"),
		"pid/<root>/child/<act>":         SubflowStatusKey(j, "<act>"),
		"pid/<root>/seq":                 CompletionSeqKey(j),
		"pid/<root>/done/<seq>":          CompensableKey(j, 3),
		"pid/<root>/comp":                CompensationKey(j),
		"pid/<root>/halt":                CompensationHaltKey(j),
		"pid/<root>/comp/<i>":            CompensationStepKey(j, 4),
		"jobs/<inverted-root>":           JobIndexKey(j),
		"jobs.indexed":                   JobIndexBuiltKey(),
		"format":                         FormatKey(),
		"blobs/<sha256>":                 BlobKey("<sha256>"),
		"start/<key>":                    StartKey("<key>"),
		"dlq/<msg>":                      DeadLetterKey([16]byte{0xab}),
		"sched/<name>":                   ScheduleKey("<name>"),
		"rate/<connector>":               RateKey("<connector>"),
		"cache/<key>":                    CacheEntryKey("<key>"),
		"dedupe/edge/<key>":              EdgeDedupeKey("<key>"),
		"dedupe/<key>":                   LegacyCapabilityDedupeKey("<key>"),
		"cdedupe/<namespace>/<key>":      CapabilityDedupeKey("<namespace>", "<key>"),
		"kv/<namespace>/<key>":           KVKey("<namespace>", "<key>"),
		"exp/<ns>/<key>":                 ExpiryKey(time.Unix(0, 7), []byte("<key>")),
	}
	// What each placeholder becomes for the arguments above.
	fill := strings.NewReplacer(
		"pid/<root>/", root, "<n>", "7", "<msg>", "ab000000000000000000000000000000",
		"<seq>", "000000000003", "<t>", "00000000000000000007.000008", "<i>", "000000000004", "<shard>", "000000000005",
		"<inverted-root>", "fe"+strings.Repeat("ff", 15), "<ns>", "00000000000000000007",
	)
	for drawn, key := range layout {
		if want := fill.Replace(drawn); string(key) != want {
			t.Errorf("%s: the function returns %q, the drawing says %q", drawn, key, want)
		}
	}

	src, err := os.ReadFile("keys.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^//\t(\S+)\s+.*\s(value|counter)$`)
	drawn := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(string(src), -1) {
		drawn[m[1]] = true
		if _, ok := layout[m[1]]; !ok {
			t.Errorf("keys.go draws %s, which no key function returns", m[1])
		}
	}
	for k := range layout {
		if !drawn[k] {
			t.Errorf("keys.go does not draw %s", k)
		}
	}

	// Every function in keys.go that returns a key is in the table above:
	// counting them catches a new one added without its line.
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "keys.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keyFuncs int
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && strings.HasSuffix(fn.Name.Name, "Key") && fn.Name.Name != "JobKey" && fn.Recv == nil {
			keyFuncs++
		}
	}
	if keyFuncs != len(layout) {
		t.Errorf("keys.go has %d key functions, the layout table %d", keyFuncs, len(layout))
	}
}
