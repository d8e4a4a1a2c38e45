package jobapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/flowgen-dev/flowgen/internal/atomicfile"
)

// Endpoint is the content of the endpoint file a server writes next to the
// store it owns (mode 0600: the token is the key to the API).
type Endpoint struct {
	Addr  string `json:"addr"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
	Store string `json:"store"`
}

// EndpointPath is where the server owning the store at storePath writes
// its endpoint file.
func EndpointPath(storePath string) string { return storePath + ".api.json" }

// ErrNoServer: no server owns the store (no endpoint file, or a stale one
// whose server does not answer).
var ErrNoServer = errors.New("no flowgen server owns the store")

// Discover returns a client of the server that owns the store at
// storePath, or an error wrapping ErrNoServer when none runs.
func Discover(ctx context.Context, storePath string) (*Client, error) {
	raw, err := os.ReadFile(EndpointPath(storePath))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", storePath, ErrNoServer)
	}
	if err != nil {
		return nil, fmt.Errorf("endpoint file: %w", err)
	}
	var ep Endpoint
	if err := json.Unmarshal(raw, &ep); err != nil {
		return nil, fmt.Errorf("endpoint file %s: %w", EndpointPath(storePath), err)
	}
	c := NewClient(ep)
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := c.Health(hctx)
	if err != nil || info.PID != ep.PID {
		return nil, fmt.Errorf("%s: the server in %s (pid %d) does not answer: %w", storePath, EndpointPath(storePath), ep.PID, ErrNoServer)
	}
	return c, nil
}

// Serve listens on addr (host:port; port 0 picks one), writes the endpoint
// file for the embedded store at storePath (none when storePath is ""),
// and serves svc until ctx ends; then it removes the file and shuts the
// server down, letting requests in flight finish. ready, when set, is
// called once the endpoint file is in place.
func Serve(ctx context.Context, addr, storePath string, svc Service, opts HandlerOptions, ready func(Endpoint)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()
	secret := make([]byte, 32)
	rand.Read(secret)
	ep := Endpoint{Addr: ln.Addr().String(), Token: base64.RawURLEncoding.EncodeToString(secret), PID: os.Getpid(), Store: storePath}
	opts.Token = ep.Token
	opts.Info.PID = ep.PID
	if storePath != "" {
		opts.Info.Store = storePath
		raw, _ := json.MarshalIndent(ep, "", "  ")
		path := EndpointPath(storePath)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Write(path, append(raw, '\n'), 0o600); err != nil {
			return err
		}
		defer removeIfOurs(path, ep)
	}
	srv := &http.Server{Handler: NewHandler(svc, opts), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ep)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// removeIfOurs removes the endpoint file unless another server has
// replaced it since.
func removeIfOurs(path string, ep Endpoint) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var cur Endpoint
	if json.Unmarshal(raw, &cur) == nil && cur.Token == ep.Token {
		os.Remove(path)
	}
}
