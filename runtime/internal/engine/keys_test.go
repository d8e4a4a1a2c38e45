package engine

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
		"pid/<root>/meta":                metaKey(j),
		"pid/<root>/status":              statusKey(j),
		"pid/<root>/tomb":                tombKey(j),
		"pid/<root>/paused":              pausedKey(j),
		"pid/<root>/sem":                 semKey(j),
		"pid/<root>/spent":               spentKey(j),
		"pid/<root>/res/<act>":           resultKey(j, "<act>"),
		"pid/<root>/fail/<act>":          failKey(j, "<act>"),
		"pid/<root>/term/<act>":          termKey(j, "<act>"),
		"pid/<root>/log/<act>/<n>":       attemptLogKey(j, "<act>", 7),
		"pid/<root>/wait/<act>":          waitKey(j, "<act>"),
		"pid/<root>/signal/<act>":        signalKey(j, "<act>"),
		"pid/<root>/act/<act>":           activityKey(j, "<act>"),
		"pid/<root>/guid/<msg>":          guidKey(j, msg),
		"pid/<root>/agg/<act>":           aggregateKey(j, "<act>"),
		"pid/<root>/agg/<act>/<shard>":   aggregateShardKey(j, "<act>", 5),
		"pid/<root>/items/<act>":         itemsKey(j, "<act>"),
		"pid/<root>/sub/<act>":           subflowChildKey(j, "<act>"),
		"pid/<root>/unserved/<act>":      unservedKey(j, "<act>"),
		"pid/<root>/hist/<t>/<ev>/<act>": historyKey(j, time.Unix(0, 7), 8, "<ev>", "<act>"),
		"pid/<root>/child/<act>":         subflowStatusKey(j, "<act>"),
		"pid/<root>/seq":                 completionSeqKey(j),
		"pid/<root>/done/<seq>":          compensableKey(j, 3),
		"pid/<root>/comp":                compensationKey(j),
		"pid/<root>/halt":                compensationHaltKey(j),
		"pid/<root>/comp/<i>":            compensationStepKey(j, 4),
		"jobs/<inverted-root>":           jobIndexKey(j),
		"jobs.indexed":                   jobIndexBuiltKey(),
		"blobs/<sha256>":                 blobKey("<sha256>"),
		"start/<key>":                    startKey("<key>"),
		"dlq/<msg>":                      deadLetterKey([16]byte{0xab}),
		"sched/<name>":                   scheduleKey("<name>"),
		"rate/<connector>":               rateKey("<connector>"),
		"cache/<key>":                    cacheEntryKey("<key>"),
		"dedupe/edge/<key>":              edgeDedupeKey("<key>"),
		"dedupe/<key>":                   LegacyCapabilityDedupeKey("<key>"),
		"cdedupe/<namespace>/<key>":      CapabilityDedupeKey("<namespace>", "<key>"),
		"kv/<namespace>/<key>":           KVKey("<namespace>", "<key>"),
		"exp/<ns>/<key>":                 expiryKey(time.Unix(0, 7), []byte("<key>")),
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
		if fn, ok := d.(*ast.FuncDecl); ok && strings.HasSuffix(fn.Name.Name, "Key") && fn.Name.Name != "jobKey" && fn.Recv == nil {
			keyFuncs++
		}
	}
	if keyFuncs != len(layout) {
		t.Errorf("keys.go has %d key functions, the layout table %d", keyFuncs, len(layout))
	}
}
