package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/client"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// admin is how the operator commands (token, gc) reach the registry:
// through a running registryd's admin API, or, when none is named, the
// stores themselves.
type admin interface {
	CreateToken(ctx context.Context, req api.TokenRequest) (api.TokenCreated, error)
	ListTokens(ctx context.Context) ([]api.TokenInfo, error)
	RevokeToken(ctx context.Context, id string) (api.TokenInfo, error)
	CollectGarbage(ctx context.Context, req api.GCRequest) (api.GCReport, error)
	Close() error
}

// adminFlags choose the backend: --registry and --token for the admin API.
type adminFlags struct {
	storageFlags
	url, token string
}

func (f *adminFlags) register(fs *flag.FlagSet) {
	f.storageFlags.register(fs)
	fs.StringVar(&f.url, "registry", envOr("REGISTRYD_URL", ""), "URL of a running registryd to manage through its admin API [REGISTRYD_URL]")
	fs.StringVar(&f.token, "token", envOr("REGISTRYD_ADMIN_TOKEN", ""), "admin token for --registry [REGISTRYD_ADMIN_TOKEN]")
}

// open returns the admin API of --registry, or the stores.
func (f *adminFlags) open(ctx context.Context) (admin, error) {
	if f.url != "" {
		if f.token == "" {
			return nil, fmt.Errorf("--registry needs --token (an admin token)")
		}
		return remoteAdmin{client.New(f.url, f.token)}, nil
	}
	if c, err := discover(ctx, f.dataDir); err == nil {
		return remoteAdmin{c}, nil
	}
	m, err := f.openMeta(ctx)
	if errors.Is(err, meta.ErrLocked) {
		return nil, fmt.Errorf("%w\n\tregistryd is running, and its endpoint file (%s) does not lead to it: manage it through its admin API with --registry URL --token ADMIN_TOKEN (REGISTRYD_URL, REGISTRYD_ADMIN_TOKEN)",
			err, filepath.Join(f.dataDir, endpointFile))
	}
	if err != nil {
		return nil, err
	}
	return &localAdmin{meta: m, st: &f.storageFlags}, nil
}

type remoteAdmin struct{ *client.Client }

func (remoteAdmin) Close() error { return nil }

// localAdmin works on the stores directly (no server running).
type localAdmin struct {
	meta  meta.Store
	blobs blobstore.Store
	st    *storageFlags
}

const localActor = "registryd (local)"

func (l *localAdmin) CreateToken(ctx context.Context, req api.TokenRequest) (api.TokenCreated, error) {
	return registry.CreateToken(ctx, l.meta, req, localActor, time.Now())
}

func (l *localAdmin) ListTokens(ctx context.Context) ([]api.TokenInfo, error) {
	ts, err := l.meta.ListTokens(ctx)
	var out []api.TokenInfo
	for _, t := range ts {
		out = append(out, registry.Info(t))
	}
	return out, err
}

func (l *localAdmin) RevokeToken(ctx context.Context, id string) (api.TokenInfo, error) {
	return registry.RevokeToken(ctx, l.meta, id, localActor, time.Now())
}

func (l *localAdmin) CollectGarbage(ctx context.Context, req api.GCRequest) (api.GCReport, error) {
	if l.blobs == nil {
		b, err := l.st.openBlobs(ctx)
		if err != nil {
			return api.GCReport{}, err
		}
		l.blobs = b
	}
	opts := registry.GCOptions{DryRun: req.DryRun}
	if req.Grace != "" {
		d, err := time.ParseDuration(req.Grace)
		if err != nil {
			return api.GCReport{}, fmt.Errorf("--grace: %w", err)
		}
		opts.Grace = d
	}
	return registry.CollectGarbage(ctx, l.meta, l.blobs, time.Now(), opts)
}

func (l *localAdmin) Close() error { return l.meta.Close() }
