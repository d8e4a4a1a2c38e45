package engine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/wasmhost"
)

// modules loads the modules of an engine's confined connectors into one
// wasm host, started when the first is loaded.
type modules struct {
	dir, cache string
	log        *slog.Logger

	once sync.Once
	host *wasmhost.Host
	err  error
}

func newModules(opts Options) *modules {
	m := &modules{dir: opts.ModuleDir, cache: opts.ModuleCache, log: opts.Logger}
	if m.log == nil {
		m.log = slog.Default()
	}
	switch m.cache {
	case "-":
		m.cache = ""
	case "":
		if dir, err := os.UserCacheDir(); err == nil {
			m.cache = filepath.Join(dir, "flowgen", "modules")
		}
	}
	return m
}

// load reads c's module and loads it, checked against its certified
// digest and its declaration, as a Runner.
func (m *modules) load(c runtime.Confined) (runtime.Runner, error) {
	m.once.Do(func() {
		m.host, m.err = wasmhost.New(context.Background(), wasmhost.Options{CacheDir: m.cache, Logger: m.log, QueryRows: queryRows})
	})
	if m.err != nil {
		return nil, m.err
	}
	path := c.Path
	if !filepath.IsAbs(path) && m.dir != "" {
		path = filepath.Join(m.dir, path)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("confined %s %s: %w", c.Declaration.ID, c.Declaration.Version, err)
	}
	start := time.Now()
	mod, err := m.host.Load(context.Background(), wasm, c.Declaration.NodeInfo(), c.Digest)
	if err != nil {
		return nil, err
	}
	m.log.Info("confined connector loaded", "connector", c.Declaration.ID, "version", c.Declaration.Version,
		"module", c.Digest, "capabilities", c.Declaration.Capabilities, "took", time.Since(start).Round(time.Millisecond))
	return mod.Runner(), nil
}
