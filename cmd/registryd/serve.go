package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify/sandbox"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// passwordEnv holds the signing key's password, as for flowgen sign.
const passwordEnv = "FLOWGEN_KEY_PASSWORD"

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var st storageFlags
	st.register(fs)
	addr := fs.String("addr", envOr("REGISTRYD_ADDR", "127.0.0.1:8700"), "listen address [REGISTRYD_ADDR]")
	keyFile := fs.String("signing-key", envOr("REGISTRYD_SIGNING_KEY", ""), "PEM private key that signs certified versions [REGISTRYD_SIGNING_KEY] (default: DATA_DIR/registry.key, created on first start)")
	passwordFile := fs.String("signing-key-password-file", envOr("REGISTRYD_SIGNING_KEY_PASSWORD_FILE", ""), "file holding the signing key's password (else $"+passwordEnv+"); read once at start, and a new key is created encrypted with it [REGISTRYD_SIGNING_KEY_PASSWORD_FILE]")
	flowgenModule := fs.String("flowgen-module", envOr("REGISTRYD_FLOWGEN_MODULE", ""), "directory of the flowgen module that certification builds connectors against, for artifacts requiring an unpublished flowgen [REGISTRYD_FLOWGEN_MODULE]")
	fixtureDB := fs.String("fixture-database", envOr("REGISTRYD_FIXTURE_DATABASE", ""), "postgres:// URL of a database that db connectors' fixtures run in during certification, each run as a throwaway role; use one that holds nothing else [REGISTRYD_FIXTURE_DATABASE]")
	maxSize := fs.Int64("max-artifact-size", registry.DefaultMaxArtifactSize, "largest artifact zip accepted, in bytes")
	bodyTimeout := fs.Duration("body-timeout", 30*time.Second, "cut off an upload that sends nothing for this long")
	tlsCert := fs.String("tls-cert", envOr("REGISTRYD_TLS_CERT", ""), "PEM certificate to serve HTTPS with (the go command sends credentials only over HTTPS) [REGISTRYD_TLS_CERT]")
	tlsKey := fs.String("tls-key", envOr("REGISTRYD_TLS_KEY", ""), "PEM private key of --tls-cert [REGISTRYD_TLS_KEY]")
	metricsAddr := fs.String("metrics-addr", envOr("REGISTRYD_METRICS_ADDR", ""), "serve /metrics on this address of its own, without authentication (default: on --addr, for tokens with the metrics scope) [REGISTRYD_METRICS_ADDR]")
	var hooks repeated
	fs.Var(&hooks, "webhook", "NAME=URL of a target for publish, certification, yank and deprecate events; repeat for several")
	hookSecret := fs.String("webhook-secret-file", envOr("REGISTRYD_WEBHOOK_SECRET_FILE", ""), "file holding the key that signs webhook deliveries (HMAC-SHA256; at least 16 bytes) [REGISTRYD_WEBHOOK_SECRET_FILE]")
	hookPrivate := fs.Bool("webhook-allow-private", false, "allow webhook targets on loopback, link-local and private addresses (an internal receiver)")
	gcGrace := fs.Duration("gc-grace", registry.DefaultGCGrace, "keep a blob that no version refers to (what a failed upload stored) for this long before collecting it")
	janitor := fs.Duration("janitor-interval", time.Hour, "how often to collect garbage and sweep what interrupted uploads and certifications left (0: only at start)")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long a stop waits for requests in flight")
	var prefixes repeated
	fs.Var(&prefixes, "module-prefix", "NAMESPACE=PREFIX: let the namespace also publish modules under PREFIX (each owns "+artifact.ModulePrefix+"/NAMESPACE); repeat for several")
	workers := fs.Int("certify-workers", 0, "versions certified at once, taken fairly across namespaces (default: the processors, at most 4)")
	certifyTimeout := fs.Duration("certify-timeout", registry.DefaultCertifyTimeout, "reject a version whose certification takes longer (a connector that hangs)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: registryd serve [flags]\n\nServes the registry API, the Go module proxy (/go/), /metrics, /healthz and /readyz,\nand certifies uploads in the background. SIGINT or SIGTERM stops it gracefully:\nrequests in flight finish; a certification in progress resumes at the next start.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	password, err := keyPassword(*passwordFile)
	if err != nil {
		return err
	}
	signer, err := loadOrCreateKey(*keyFile, st.dataDir, password, log)
	if err != nil {
		return err
	}
	worker, err := workerCommand(st.dataDir, *keyFile, *passwordFile)
	if err != nil {
		return err
	}
	webhooks, err := webhookTargets(hooks, *hookSecret, *hookPrivate)
	if err != nil {
		return err
	}
	modulePrefixes := map[string][]string{}
	for _, p := range prefixes {
		ns, prefix, ok := strings.Cut(p, "=")
		if !ok || ns == "" || prefix == "" {
			return fmt.Errorf("--module-prefix %q: want NAMESPACE=PREFIX", p)
		}
		modulePrefixes[ns] = append(modulePrefixes[ns], strings.TrimSuffix(prefix, "/"))
	}
	metaStore, err := st.openMeta(ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	defer metaStore.Close()
	blobs, err := st.openBlobs(ctx)
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if *flowgenModule != "" {
		if *flowgenModule, err = filepath.Abs(*flowgenModule); err != nil {
			return err
		}
	}
	localAdmin := newLocalSecret()
	srv, err := registry.New(registry.Config{
		LocalAdminToken: localAdmin,
		Meta:            metaStore, Blobs: blobs, Signer: signer, Logger: log, MaxArtifactSize: *maxSize,
		Worker: worker, Webhooks: webhooks, GCGrace: *gcGrace, JanitorInterval: *janitor,
		FlowgenModule: *flowgenModule, FixtureDatabase: *fixtureDB, BodyReadTimeout: *bodyTimeout, WorkDir: filepath.Join(st.dataDir, "work"),
		CertifyWorkers: *workers, CertifyTimeout: *certifyTimeout, ModulePrefixes: modulePrefixes,
	})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(st.dataDir, "work"), 0o755); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := srv.HTTPServer()
	if *metricsAddr != "" {
		mln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics address: %w", err)
		}
		ms := &http.Server{Handler: srv.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute}
		go ms.Serve(mln)
		defer ms.Close()
	}
	certCtx, stopCertifier := context.WithCancel(context.Background())
	certDone := make(chan struct{})
	go func() {
		defer close(certDone)
		srv.RunCertifier(certCtx)
	}()
	janitorDone := make(chan struct{})
	go func() {
		defer close(janitorDone)
		srv.RunJanitor(certCtx)
	}()
	hooksDone := make(chan struct{})
	go func() {
		defer close(hooksDone)
		srv.RunWebhooks(certCtx)
	}()
	serveErr := make(chan error, 1)
	go func() {
		if *tlsCert != "" || *tlsKey != "" {
			serveErr <- hs.ServeTLS(ln, *tlsCert, *tlsKey)
			return
		}
		serveErr <- hs.Serve(ln)
	}()
	log.Info("registryd listening", slog.String("addr", ln.Addr().String()), slog.Bool("tls", *tlsCert != ""), slog.String("data_dir", st.dataDir),
		slog.Bool("postgres", st.databaseURL != ""), slog.String("s3", st.s3Endpoint))
	// registryd token and gc on this machine find the running registry
	// through this file, as flowgen's commands find flowgen serve.
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	ep := endpoint{URL: scheme + "://" + ln.Addr().String(), Token: localAdmin, PID: os.Getpid(), CAFile: absOrEmpty(*tlsCert)}
	if err := ep.write(st.dataDir); err != nil {
		log.Warn("no endpoint file: registryd token and gc need --registry and --token", slog.Any("error", err))
	} else {
		defer ep.remove(st.dataDir)
	}

	select {
	case err := <-serveErr:
		stopCertifier()
		<-certDone
		<-janitorDone
		<-hooksDone
		return err
	case <-ctx.Done():
	}
	log.Info("registryd stopping", slog.Duration("grace", *grace))
	stopCertifier()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	err = hs.Shutdown(shutdownCtx)
	if err != nil {
		// The grace is over: whatever is still open is cut off.
		hs.Close()
	}
	<-certDone
	<-janitorDone
	<-hooksDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("registryd stopped")
	return nil
}

// workerCommand is how serve starts its certification worker: registryd
// itself, in a bubblewrap view of the host without the data directory
// (but for its work directory), the signing key or its password file, and
// with a PID namespace of its own. Certification runs connectors in a
// sandbox anyway; without bubblewrap registryd does not start.
func workerCommand(dataDir, keyFile, passwordFile string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find registryd's own binary for the certification worker: %w", err)
	}
	sb, err := sandbox.New(sandbox.Options{})
	if err != nil {
		return nil, fmt.Errorf("certification needs its sandbox, and registryd never certifies without it: %w", err)
	}
	if keyFile == "" {
		keyFile = filepath.Join(dataDir, "registry.key")
	}
	hide := []string{dataDir, keyFile}
	if passwordFile != "" {
		hide = append(hide, passwordFile)
	}
	work := filepath.Join(dataDir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	return sb.Masked([]string{self}, hide, []string{work})
}

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// webhookTargets builds the webhook targets from NAME=URL flags and the
// secret file.
func webhookTargets(flags []string, secretFile string, allowPrivate bool) ([]registry.Webhook, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	if secretFile == "" {
		return nil, fmt.Errorf("--webhook needs --webhook-secret-file, the key that signs deliveries")
	}
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	secret = []byte(strings.TrimSpace(string(secret)))
	var out []registry.Webhook
	for _, f := range flags {
		name, url, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--webhook %q: want NAME=URL", f)
		}
		out = append(out, registry.Webhook{Name: name, URL: url, Secret: secret, AllowPrivate: allowPrivate})
	}
	return out, nil
}

// keyPassword reads the signing key's password once: from file when one is
// given, else from $FLOWGEN_KEY_PASSWORD, which it then removes from the
// environment so that no process registryd starts inherits it.
func keyPassword(file string) ([]byte, error) {
	defer os.Unsetenv(passwordEnv)
	if file == "" {
		return []byte(os.Getenv(passwordEnv)), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("signing key password: %w", err)
	}
	return []byte(strings.TrimRight(string(data), "\r\n")), nil
}

// loadOrCreateKey reads the signing key, or creates DATA_DIR/registry.key
// (and .pub) the first time when no key is given.
func loadOrCreateKey(file, dataDir string, password []byte, log *slog.Logger) (*signer.Signer, error) {
	if file == "" {
		file = filepath.Join(dataDir, "registry.key")
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			priv, pub, err := signer.GenerateKey(password)
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(file, priv, 0o600); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dataDir, "registry.pub"), pub, 0o644); err != nil {
				return nil, err
			}
			log.Warn("created a new signing key; back it up, or pass --signing-key", slog.String("key", file))
		}
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	s, err := signer.Load(pem, password)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", file, err)
	}
	return s, nil
}
