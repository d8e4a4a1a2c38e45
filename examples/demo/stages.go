package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/lib/pq" // the warehouse table's database

	"github.com/flowgen-dev/flowgen/examples/standins"
	"github.com/flowgen-dev/flowgen/internal/localtls"
)

// demo is the state the stages share.
type demo struct {
	repo, work, dbURL string
	out               io.Writer
	bin               string

	apis     *standins.APIs
	apisAddr string
	apisSrv  *http.Server

	db        *sql.DB
	schema    string
	schemaURL string
	jobID     string

	serveProc   *exec.Cmd
	serveExited chan error
	consoleURL  string

	regProc           *exec.Cmd
	regURL, regAddr   string
	regData, regToken string
	regCert           string
	regClient         *http.Client
	pulledLine        string
	stopOnce          sync.Once
}

// command runs a program and returns its stdout and stderr; a non-zero
// exit is an error that carries both.
func (d *demo) command(ctx context.Context, dir string, env []string, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String(), nil
}

func (d *demo) flowgen(ctx context.Context, env []string, args ...string) (string, string, error) {
	return d.command(ctx, d.repo, env, filepath.Join(d.bin, "flowgen"), args...)
}

// registryEnv points flowgen at the demo's registry.
func (d *demo) registryEnv() []string {
	return []string{"FLOWGEN_REGISTRY=" + d.regURL, "FLOWGEN_REGISTRY_TOKEN=" + d.regToken, "SSL_CERT_FILE=" + d.regCert}
}

func (d *demo) tools(ctx context.Context) (string, error) {
	d.bin = filepath.Join(d.work, "bin")
	if _, _, err := d.command(ctx, d.repo, nil, "go", "build", "-o", d.bin+"/", "./cmd/flowgen", "./cmd/registryd"); err != nil {
		return "", err
	}
	v, _, _ := d.command(ctx, d.repo, nil, "go", "env", "GOVERSION")
	return fmt.Sprintf("flowgen and registryd built with %s", strings.TrimSpace(v)), nil
}

func (d *demo) generate(ctx context.Context) (string, error) {
	_, stderr, err := d.flowgen(ctx, nil, "gen", "--check", "examples")
	if err != nil {
		return "", fmt.Errorf("the examples' generated code is not up to date (run go generate ./...): %w", err)
	}
	return strings.TrimSpace(lastLine(stderr)), nil
}

func (d *demo) startStandins(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	d.apis = standins.New()
	d.apisAddr = ln.Addr().String()
	d.apisSrv = &http.Server{Handler: d.apis, ReadHeaderTimeout: 5 * time.Second}
	go d.apisSrv.Serve(ln)
	return fmt.Sprintf("%s on http://%s, reached through FLOWGEN_CONNECT_TO; secrets from FLOWGEN_SECRET_*", strings.Join(standins.Hosts, ", "), d.apisAddr), nil
}

// runFlow runs the order flow on the embedded store with the warehouse
// table in a schema of its own.
func (d *demo) runFlow(ctx context.Context) (string, error) {
	schemaURL, err := d.createSchema(ctx)
	if err != nil {
		return "", err
	}
	d.schemaURL = schemaURL
	env := append(standins.Env(d.apisAddr), "FLOWGEN_DATABASE_URL="+schemaURL)
	store := filepath.Join(d.work, "flowgen.db")
	stdout, _, err := d.flowgen(ctx, env, "run", "--store", store, "--blobs", filepath.Join(d.work, "blobs"),
		"--input", "examples/flows/order.json", "examples/flows/order-fulfilment.yaml")
	if err != nil {
		return "", err
	}
	var status struct {
		Job    string                     `json:"job"`
		State  string                     `json:"state"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(stdout), &status); err != nil || status.State != "succeeded" {
		return "", fmt.Errorf("the job did not succeed: %v\n%s", err, stdout)
	}
	d.jobID = status.Job
	inspect, _, err := d.flowgen(ctx, nil, "inspect", "--store", store, status.Job)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(d.out, "%s\n", indent(strings.TrimSpace(inspect), "        "))
	c := d.apis.Counts()
	var version int64
	if err := d.db.QueryRowContext(ctx, `SELECT row_version FROM `+d.schema+`.orders WHERE order_id = 'ord-1001'`).Scan(&version); err != nil {
		return "", fmt.Errorf("the order is not in the warehouse table: %w", err)
	}
	return fmt.Sprintf("job %s succeeded: %d lookups, %d charge, order saved (row version %d), %d Slack post", status.Job, c.Lookups, len(c.Charges), version, c.Posts), nil
}

// createSchema makes the warehouse table in a fresh schema and returns a
// URL whose search_path is that schema.
func (d *demo) createSchema(ctx context.Context) (string, error) {
	db, err := sql.Open("postgres", d.dbURL)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		return "", fmt.Errorf("PostgreSQL at %s (the warehouse connector's database; make demo starts it, or set FLOWGEN_DEMO_DATABASE_URL): %w", d.dbURL, err)
	}
	d.db = db
	suffix := make([]byte, 4)
	rand.Read(suffix)
	d.schema = "flowgen_demo_" + hex.EncodeToString(suffix)
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+d.schema+`; CREATE TABLE `+d.schema+`.orders (
		order_id text PRIMARY KEY, charge_id text NOT NULL, amount_cents bigint NOT NULL,
		currency text NOT NULL, status text NOT NULL, row_version bigint NOT NULL)`); err != nil {
		return "", err
	}
	u, err := url.Parse(d.dbURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", d.schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (d *demo) certify(ctx context.Context) (string, error) {
	stdout, _, err := d.flowgen(ctx, nil, "certify", "--out", filepath.Join(d.work, "certification"), "--fixture-database", d.dbURL, "examples/connectors/charge")
	if err != nil {
		return "", err
	}
	passed, checks := 0, 0
	for _, line := range strings.Split(stdout, "\n") {
		verdict, _, _ := strings.Cut(line, " ")
		switch verdict {
		case "PASS", "WARN":
			passed++
			checks++
		case "FAIL", "SKIP":
			checks++
		}
	}
	return fmt.Sprintf("%s (%d of %d checks passed or warned)", strings.TrimSpace(lastLine(stdout)), passed, checks), nil
}

func (d *demo) startRegistry(ctx context.Context) (string, error) {
	d.regData = filepath.Join(d.work, "registry")
	tlsDir := filepath.Join(d.work, "tls")
	os.MkdirAll(tlsDir, 0o700)
	cert, key, client, err := localtls.SelfSigned(tlsDir)
	if err != nil {
		return "", err
	}
	d.regCert, d.regClient = cert, client
	registryd := filepath.Join(d.bin, "registryd")
	token, _, err := d.command(ctx, d.repo, nil, registryd, "token", "create", "--data-dir", d.regData, "--name", "demo", "--scope", "admin")
	if err != nil {
		return "", err
	}
	d.regToken = strings.TrimSpace(token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	d.regAddr = ln.Addr().String()
	ln.Close()
	d.regURL = "https://" + d.regAddr
	logFile, err := os.Create(filepath.Join(d.work, "registryd.log"))
	if err != nil {
		return "", err
	}
	d.regProc = exec.Command(registryd, "serve", "--data-dir", d.regData, "--addr", d.regAddr, "--flowgen-module", d.repo,
		"--fixture-database", d.dbURL, "--tls-cert", cert, "--tls-key", key)
	d.regProc.Stdout, d.regProc.Stderr = logFile, logFile
	if err := d.regProc.Start(); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get(d.regURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := os.ReadFile(logFile.Name())
			return "", fmt.Errorf("registryd did not become ready: %v\n%s", err, lastLines(string(log), 10))
		}
	}
	return fmt.Sprintf("registryd on %s, local-disk storage in %s, serving flowgen from this checkout", d.regURL, d.regData), nil
}

// publishAll publishes every example connector at once and follows each
// certification to its end.
func (d *demo) publishAll(ctx context.Context) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(d.repo, "examples/connectors/*/connector.yaml"))
	if err != nil {
		return "", err
	}
	type outcome struct {
		name string
		out  string
		err  error
	}
	results := make([]outcome, len(dirs))
	var waits atomic.Int64
	var wg sync.WaitGroup
	for i, spec := range dirs {
		dir := filepath.Dir(spec)
		wg.Go(func() {
			stdout, stderr, err := d.flowgen(ctx, d.registryEnv(), "publish", dir)
			waits.Add(int64(strings.Count(stderr, "registry busy")))
			results[i] = outcome{filepath.Base(dir), stdout, err}
		})
	}
	wg.Wait()
	var certified, problems []string
	for _, r := range results {
		if r.err != nil {
			problems = append(problems, r.err.Error())
			continue
		}
		certified = append(certified, r.name)
	}
	sort.Strings(certified)
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "\n"))
	}
	detail := fmt.Sprintf("%d connectors certified by the registry: %s", len(certified), strings.Join(certified, ", "))
	if n := waits.Load(); n > 0 {
		// One token publishing all at once meets its upload cap; the
		// client waits what the registry asks.
		detail += fmt.Sprintf(" (%d uploads waited for a slot)", n)
	}
	return detail, nil
}

func (d *demo) pull(ctx context.Context) (string, error) {
	stdout, stderr, err := d.flowgen(ctx, d.registryEnv(), "pull", "--key", filepath.Join(d.regData, "registry.pub"),
		"--dir", d.pulledDir(), confinedConnectors["charge"])
	if err != nil {
		return "", err
	}
	d.pulledLine = strings.TrimSpace(stdout)
	fmt.Fprintf(d.out, "%s\n", indent(strings.TrimSpace(stderr)+"\n"+d.pulledLine, "        "))
	return strings.TrimSpace(firstLine(stderr)), nil
}

// consumerMain imports the pulled connector.
const consumerMain = `package main

import (
	"fmt"

	charge "flowgen.dev/connectors/payments/charge/v2"
)

func main() {
	fmt.Printf("%s %s (%s, %s), egress %v\n", charge.ID, charge.Version, charge.Effects, charge.Determinism, charge.Egress())
}
`

// buildConsumer builds a program importing the pulled connector in a
// fresh module, fetching it with the stock go command through the
// registry's module proxy.
func (d *demo) buildConsumer(ctx context.Context) (string, error) {
	const module, version = "flowgen.dev/connectors/payments/charge/v2", "v2.1.0"
	dir := filepath.Join(d.work, "consumer")
	os.MkdirAll(dir, 0o755)
	if _, _, err := d.command(ctx, dir, []string{"GOWORK=off"}, "go", "mod", "init", "example.com/demo-consumer"); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(consumerMain), 0o644); err != nil {
		return "", err
	}
	// The third-party checksums the registry certified the connector with
	// (its go.sum, under the registry's signature, which pull verified);
	// flowgen's and the connector's are recorded as they are fetched.
	gosum, err := zipMember(filepath.Join(d.pulledDir(), module, "@v", version+".zip"), module+"@"+version+"/go.sum")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), gosum, 0o644); err != nil {
		return "", err
	}
	// A module cache of its own, so that nothing cached by another registry
	// under the same versions stands in for what this one serves;
	// third-party modules come from this machine's module cache, offered as
	// a proxy after the registry, then from the usual proxies.
	upstream, _, _ := d.command(ctx, dir, nil, "go", "env", "GOPROXY")
	modcache, _, _ := d.command(ctx, dir, nil, "go", "env", "GOMODCACHE")
	proxy := "https://demo:" + d.regToken + "@" + d.regAddr + "/go"
	local := "file://" + filepath.ToSlash(filepath.Join(strings.TrimSpace(modcache), "cache", "download"))
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE=" + filepath.Join(d.work, "gomodcache"),
		"GOPROXY=" + proxy + "," + local + "," + strings.TrimSpace(upstream),
		"GONOSUMDB=flowgen.dev,github.com/flowgen-dev/flowgen", "SSL_CERT_FILE=" + d.regCert}
	if _, _, err := d.command(ctx, dir, env, "go", "get", module+"@"+version); err != nil {
		return "", err
	}
	if _, _, err := d.command(ctx, dir, env, "go", "build", "-o", "consumer", "."); err != nil {
		return "", err
	}
	out, _, err := d.command(ctx, dir, nil, filepath.Join(dir, "consumer"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("go get through %s/go, go build, and the program says: %s", d.regURL, strings.TrimSpace(out)), nil
}

func zipMember(zipPath, name string) ([]byte, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	return nil, fmt.Errorf("%s has no %s", zipPath, name)
}

func (d *demo) stop(ctx context.Context) (string, error) {
	var stopped []string
	var err error
	d.stopOnce.Do(func() { stopped, err = d.stopEverything() })
	if err != nil {
		return "", err
	}
	return strings.Join(stopped, ", "), nil
}

// stopAll is stop for the deferred cleanup after a failure.
func (d *demo) stopAll() { d.stopOnce.Do(func() { d.stopEverything() }) }

func (d *demo) stopEverything() ([]string, error) {
	var stopped []string
	var errs []error
	if d.serveExited != nil {
		if err := d.stopServe(); err != nil {
			errs = append(errs, fmt.Errorf("flowgen serve: %w", err))
		}
		stopped = append(stopped, "flowgen serve stopped")
	}
	if d.regProc != nil && d.regProc.Process != nil {
		d.regProc.Process.Signal(syscall.SIGTERM)
		if err := d.regProc.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("registryd: %w", err))
		}
		stopped = append(stopped, "registryd stopped")
	}
	if d.apisSrv != nil {
		d.apisSrv.Close()
		stopped = append(stopped, "stand-ins stopped")
	}
	if d.db != nil {
		if d.schema != "" {
			if _, err := d.db.Exec(`DROP SCHEMA ` + d.schema + ` CASCADE`); err != nil {
				errs = append(errs, err)
			}
			stopped = append(stopped, "demo schema dropped")
		}
		d.db.Close()
	}
	return stopped, errors.Join(errs...)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
