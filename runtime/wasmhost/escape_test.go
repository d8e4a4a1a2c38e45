//go:build !race

// These tests compile a dozen modules; under the race detector wazero's
// compiler takes half a minute a module, so they run without it (make unit
// runs this package twice), and pool_test.go covers the concurrent paths
// under it.

package wasmhost_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/engine"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/anyvalue"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/assembly"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/funcvalue"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/initread"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/linkname"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/outlive"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/override"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/reflection"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost/testdata/escapes/unsafecap"
	"github.com/flowgen-dev/flowgen/wasmbuild"
)

// escape is one way a connector's Go reaches past its capabilities that
// static analysis cannot see through. Each runs twice on the same input:
// natively, as an author's own tests run it, where it must reach the
// outside (proving the case is real); and confined, where nothing may
// reach the outside and the host must report the attempt.
type escape struct {
	name string
	dir  string
	node runtime.Runner
	// input builds the activation's input from what is outside.
	input func(o *outside) map[string]string
	// reachedNatively says whether the native run reached the outside.
	reachedNatively func(o *outside, result string) bool
	// reported is what the confined run's events must include.
	reported []wantEvent
	// confined, when set, checks the confined run's result further.
	confined func(t *testing.T, result string)
}

type wantEvent struct {
	kind   wasmhost.EventKind
	detail string
}

// grants are the capabilities the engine would give the connector, with
// its allowed host, api.example.com, routed to the outside's HTTP server.
func (e escape) grants(o *outside) runtime.Capabilities {
	target, _ := url.Parse(o.url)
	return engine.Grants{Transport: &engine.ConnectTo{Routes: []engine.ConnectRoute{{Host: "api.example.com", Target: target}}}}.For(e.node.Info())
}

func escapes() []escape {
	reachedFile := func(o *outside, result string) bool { return strings.Contains(result, o.canary) }
	return []escape{{
		name: "a client and a dialer held as any",
		dir:  "testdata/escapes/anyvalue", node: anyvalue.NewNode(&anyvalue.Connector{}),
		input: func(o *outside) map[string]string {
			return map[string]string{"url": o.url + "/steal", "tcp": o.tcp, "unix": o.unix}
		},
		reachedNatively: func(o *outside, _ string) bool {
			return eventually(5*time.Second, func() bool { return o.requests.Load() == 1 && o.conns.Load() == 2 })
		},
	}, {
		name: "a file read by a template calling a method by reflection",
		dir:  "testdata/escapes/reflection", node: reflection.NewNode(&reflection.Connector{}),
		input:           func(o *outside) map[string]string { return map[string]string{"file": o.file} },
		reachedNatively: reachedFile,
		reported:        []wantEvent{{wasmhost.EventFile, "open "}},
	}, {
		name: "a file read through function values in a map",
		dir:  "testdata/escapes/funcvalue", node: funcvalue.NewNode(&funcvalue.Connector{}),
		input:           func(o *outside) map[string]string { return map[string]string{"file": o.file} },
		reachedNatively: reachedFile,
		reported:        []wantEvent{{wasmhost.EventFile, "open "}},
	}, {
		name: "a write through the read capability after an unsafe conversion",
		dir:  "testdata/escapes/unsafecap", node: unsafecap.NewNode(&unsafecap.Connector{}),
		input: func(*outside) map[string]string { return map[string]string{"url": "http://api.example.com/write"} },
		reachedNatively: func(o *outside, _ string) bool {
			return eventually(5*time.Second, func() bool { return o.posts.Load() == 1 })
		},
	}, {
		name: "a read that asks to be a delete",
		dir:  "testdata/escapes/override", node: override.NewNode(&override.Connector{}),
		input: func(*outside) map[string]string { return map[string]string{"url": "http://api.example.com/item/1"} },
		reachedNatively: func(o *outside, _ string) bool {
			return eventually(5*time.Second, func() bool { return o.overrides.Load() == 1 })
		},
		reported: []wantEvent{{wasmhost.EventCapability, "header X-HTTP-Method-Override, to be DELETE"}},
	}, {
		name: "the clocks through go:linkname, a file below os",
		dir:  "testdata/escapes/linkname", node: linkname.NewNode(&linkname.Connector{}),
		input: func(o *outside) map[string]string { return map[string]string{"file": o.file} },
		reachedNatively: func(o *outside, result string) bool {
			return reachedFile(o, result) && strings.Contains(result, fmt.Sprintf("wall %d", time.Now().Unix())[:9])
		},
		reported: []wantEvent{{wasmhost.EventFile, "open "}},
		confined: func(t *testing.T, result string) {
			if want := fmt.Sprintf("wall %d,", logicalTime.Unix()); !strings.Contains(result, want) {
				t.Errorf("confined, the wall clock through linkname is not the logical time (%s): %s", want, result)
			}
		},
	}, {
		name: "the host read at package initialization",
		dir:  "testdata/escapes/initread", node: initread.NewNode(&initread.Connector{}),
		input: func(*outside) map[string]string { return map[string]string{} },
		reachedNatively: func(_ *outside, result string) bool {
			return !strings.Contains(result, `hostname ""`) && !strings.Contains(result, " 0 environment variables")
		},
		reported: []wantEvent{{wasmhost.EventFile, "open /etc/hostname"}},
	}, {
		name: "a goroutine and a timer that outlive Run",
		dir:  "testdata/escapes/outlive", node: outlive.NewNode(&outlive.Connector{}),
		input: func(o *outside) map[string]string { return map[string]string{"tcp": o.tcp, "file": o.file} },
		reachedNatively: func(o *outside, _ string) bool {
			return eventually(5*time.Second, func() bool { return o.conns.Load() == 1 })
		},
		// The activation settles before it is over: the goroutine and the
		// timer run then, with the activation's (contained) reach.
		reported: []wantEvent{{wasmhost.EventFile, "open /tmp/"}},
	}}
}

// TestEscapesAreContained runs each escape natively, where it reaches the
// outside, and confined, where it reaches nothing and is reported.
func TestEscapesAreContained(t *testing.T) {
	t.Parallel()
	for _, e := range escapes() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			wasm := mustBuild(t, e.dir, e.node.Info())
			native, confined := newOutside(t), newOutside(t)

			result, err := runNode(e.node, e.grants(native), e.input(native))
			if err != nil {
				t.Fatalf("native run: %v", err)
			}
			if !e.reachedNatively(native, result) {
				t.Fatalf("natively the connector did not reach the outside (the case is not real): %s", result)
			}

			var ev events
			h := newHost(t, &ev)
			m, err := h.Load(context.Background(), wasm, e.node.Info(), "")
			if err != nil {
				t.Fatal(err)
			}
			result, err = runNode(m.Runner(), e.grants(confined), e.input(confined))
			time.Sleep(100 * time.Millisecond) // room for anything that would reach out late
			if n := confined.conns.Load() + confined.posts.Load() + confined.overrides.Load(); n > 0 {
				t.Errorf("confined, %d connection(s) or write(s) reached the outside", n)
			}
			if strings.Contains(result, confined.canary) {
				t.Errorf("confined, the connector read the canary file: %s", result)
			}
			for _, w := range e.reported {
				if !ev.has(w.kind, w.detail) {
					t.Errorf("no %s event with %q reported; events: %v", w.kind, w.detail, ev.list())
				}
			}
			if e.confined != nil {
				e.confined(t, result)
			}
			t.Logf("confined: result %q, error %v, events %v", result, err, ev.list())
		})
	}
}

// TestAssemblyDoesNotBuild: assembly for the host's architecture cannot
// become a module, and the build says which package and why.
func TestAssemblyDoesNotBuild(t *testing.T) {
	t.Parallel()
	native := newOutside(t)
	node := assembly.NewNode(&assembly.Connector{})
	result, err := runNode(node, runtime.Capabilities{}, map[string]string{"file": native.file})
	if err != nil || !strings.Contains(result, native.canary) {
		t.Fatalf("natively the raw system call did not read the file: %q %v", result, err)
	}
	_, _, err = build(t, "testdata/escapes/assembly", node.Info())
	var be *wasmbuild.Error
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "testdata/escapes/assembly") || !strings.Contains(err.Error(), "assembly for other architectures") {
		t.Fatalf("build: %v", err)
	}
}
