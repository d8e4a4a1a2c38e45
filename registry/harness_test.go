package registry_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/internal/testutil"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/blobstore"
	"github.com/flowgen-dev/flowgen/registry/meta"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/signing/signer"
)

// harness is a registry on an httptest server with a token per role.
type harness struct {
	t     testing.TB
	url   string
	srv   *registry.Server
	meta  meta.Store
	blobs blobstore.Store
	ts    *httptest.Server
	// blobDir is the disk blob store's root ("" on S3).
	blobDir string
	// s3 and bucket are the S3 store's client and bucket (nil on disk).
	s3     *minio.Client
	bucket string
	pub    []byte
	// Secrets: admin; publish:payments; pull; publish:catalog; publish:orders.
	admin, publisher, puller, other, orders string
	cancelCertifier                         context.CancelFunc
}

type harnessOptions struct {
	meta      meta.Store
	blobs     blobstore.Store
	blobDir   string
	s3        *minio.Client
	bucket    string
	certify   bool
	signerPEM []byte
	cfg       func(*registry.Config)
}

// testBinary is this test binary, which doubles as the certification
// worker (TestMain dispatches registry.WorkerCommand), as registryd does.
var testBinary string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[len(os.Args)-1] == registry.WorkerCommand {
		os.Exit(registry.WorkerMain(context.Background(), os.Stdin, os.Stdout, os.Stderr))
	}
	var err error
	if testBinary, err = os.Executable(); err != nil {
		panic(err)
	}
	testutil.VerifyNoLeaks(m)
}

func repoRoot(t testing.TB) string {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// diskStores is the embedded default: bbolt and a directory.
func diskStores(t testing.TB) harnessOptions {
	dir := t.TempDir()
	m, err := meta.OpenBolt(filepath.Join(dir, "registry.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b, err := blobstore.NewDisk(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return harnessOptions{meta: m, blobs: b, blobDir: filepath.Join(dir, "blobs")}
}

var testKey = func() []byte {
	priv, _, err := signer.GenerateKey(nil)
	if err != nil {
		panic(err)
	}
	return priv
}()

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.signerPEM == nil {
		o.signerPEM = testKey
	}
	signer, err := signer.Load(o.signerPEM, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := registry.Config{
		Worker: []string{testBinary},
		Meta:   o.meta, Blobs: o.blobs, Signer: signer, FlowgenModule: repoRoot(t), WorkDir: t.TempDir(), FixtureDatabase: pgtest.DatabaseURL(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetryInterval: 200 * time.Millisecond,
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	srv, err := registry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The server registryd runs, with its timeouts.
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Config = srv.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	h := &harness{t: t, url: ts.URL, srv: srv, ts: ts, meta: o.meta, blobs: o.blobs, blobDir: o.blobDir, s3: o.s3, bucket: o.bucket}
	h.pub, _ = signer.PublicKey()
	h.admin = h.token("admin", []string{registry.ScopeAdmin}, "")
	h.publisher = h.token("ci-payments", []string{"publish:payments"}, "")
	h.puller = h.token("platform", []string{registry.ScopePull}, "")
	h.other = h.token("ci-catalog", []string{"publish:catalog"}, "")
	h.orders = h.token("ci-orders", []string{"publish:orders"}, "")
	if o.certify {
		h.startCertifier()
	}
	return h
}

func (h *harness) startCertifier() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.srv.RunCertifier(ctx)
	}()
	h.cancelCertifier = func() { cancel(); <-done }
	h.t.Cleanup(h.cancelCertifier)
}

// token stores a token and returns its secret.
func (h *harness) token(name string, scopes []string, policy string) string {
	h.t.Helper()
	tok, secret, err := registry.NewToken(name, scopes, time.Time{}, policy, time.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.meta.CreateToken(context.Background(), tok); err != nil {
		h.t.Fatal(err)
	}
	return secret
}

// do sends a request and returns the status and body.
func (h *harness) do(method, path, token, ctype string, body io.Reader) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type part struct {
	name, ctype string
	data        []byte
}

// multipartBody encodes parts as multipart/form-data.
func multipartBody(t testing.TB, parts ...part) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.name))
		hdr.Set("Content-Type", p.ctype)
		w, err := mw.CreatePart(hdr)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.data)
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func manifestPart(t testing.TB, m artifact.Manifest) part {
	j, err := m.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return part{api.PartManifest, "application/json", j}
}

func zipPart(z []byte) part { return part{api.PartArtifact, "application/zip", z} }

// publish uploads a to ns/connector@version.
func (h *harness) publish(token, ns string, a *artifact.Artifact) (int, []byte) {
	h.t.Helper()
	ctype, body := multipartBody(h.t, manifestPart(h.t, a.Manifest), zipPart(a.Zip))
	return h.do("PUT", versionPath(ns, a.Manifest.Connector, a.Manifest.ConnectorVersion), token, ctype, bytes.NewReader(body))
}

func versionPath(ns, connector, version string) string {
	return "/v1/connectors/" + ns + "/" + connector + "/versions/" + version
}

// waitFor polls a version until it leaves pending and certifying.
func (h *harness) waitFor(ns, connector, version string) meta.Version {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		v, err := h.meta.GetVersion(context.Background(), meta.Key{Namespace: ns, Connector: connector, Version: version})
		if err != nil {
			h.t.Fatal(err)
		}
		if v.State == meta.Certified || v.State == meta.Rejected {
			return v
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s/%s@%s still %s (%s)", ns, connector, version, v.State, v.Progress)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshot is everything a request could change: stored blobs (as files on
// disk or objects listed by digest), every version, tokens and the audit log.
// No garbage is collected first: a failed request must leave nothing
// behind by itself, at once.
func (h *harness) snapshot() string {
	h.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	if h.blobDir != "" {
		filepath.WalkDir(h.blobDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(h.blobDir, p)
				b.WriteString(rel + "\n")
			}
			return nil
		})
	} else {
		var digests []string
		if err := h.blobs.List(ctx, func(d blobstore.Descriptor) error {
			digests = append(digests, d.Digest)
			return nil
		}); err != nil {
			h.t.Fatal(err)
		}
		slices.Sort(digests)
		b.WriteString(strings.Join(digests, "\n") + "\n")
	}
	vs, err := h.meta.Search(ctx, meta.Query{States: []meta.State{meta.Pending, meta.Certifying, meta.Certified, meta.Rejected}})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, v := range vs {
		j, _ := json.Marshal(v)
		b.Write(j)
		b.WriteString("\n")
		for _, d := range v.Blobs {
			if _, err := h.blobs.Stat(ctx, d); err != nil {
				fmt.Fprintf(&b, "missing blob %s\n", d)
			}
		}
	}
	events, _ := h.meta.Audit(ctx, 10000)
	fmt.Fprintf(&b, "%d audit events\n", len(events))
	return b.String()
}

// entry is one file of a crafted zip.
type entry struct {
	name string
	data []byte
	mode fs.FileMode
	// unlisted leaves the entry out of the manifest's file list.
	unlisted bool
}

// craft builds an artifact by hand, for inputs that flowgen package would
// never produce. The manifest lists the entries (with their real sizes and
// hashes) and has the zip's digest.
func craft(t testing.TB, connector, version string, entries ...entry) *artifact.Artifact {
	t.Helper()
	mod := "flowgen.dev/connectors/" + strings.ReplaceAll(connector, ".", "/")
	if major := strings.Split(version, ".")[0]; major != "0" && major != "1" {
		mod += "/v" + major
	}
	return craftModule(t, mod, connector, version, entries...)
}

// craftModule is craft with the module path given.
func craftModule(t testing.TB, mod, connector, version string, entries ...entry) *artifact.Artifact {
	t.Helper()
	m := artifact.Manifest{
		Format: artifact.Format, Module: mod, Version: "v" + version, Connector: connector, ConnectorVersion: version,
		Dir: "connector", Spec: json.RawMessage(`{"id":"` + connector + `","provider":"test","effects":"Pure","determinism":"Strict"}`),
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		name := e.name
		if !strings.HasPrefix(name, "/") && !strings.HasPrefix(name, "..") && !strings.HasPrefix(name, "!") {
			name = mod + "@v" + version + "/" + name
		}
		name = strings.TrimPrefix(name, "!")
		hdr := &zip.FileHeader{Name: name, Method: zip.Deflate}
		if e.mode != 0 {
			hdr.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
		if !e.unlisted {
			rel := strings.TrimPrefix(name, mod+"@v"+version+"/")
			m.Files = append(m.Files, artifact.File{Path: rel, SHA256: sha(e.data), Size: int64(len(e.data))})
		}
	}
	zw.Close()
	m.Digest, m.Size = artifact.Digest(buf.Bytes()), int64(buf.Len())
	return &artifact.Artifact{Zip: buf.Bytes(), Manifest: m}
}

// validFiles are the entries of a well-formed crafted artifact.
func validFiles(extra string) []entry {
	return []entry{
		{name: "connector.yaml", data: []byte("id: crafted\n# " + extra + "\n")},
		{name: "go.mod", data: []byte("module crafted\n")},
	}
}

func sha(b []byte) string {
	d := artifact.Digest(b)
	return strings.TrimPrefix(d, "sha256:")
}

// apiError decodes an error body.
func apiError(t testing.TB, body []byte) api.Error {
	var e struct {
		Error api.Error `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an error body: %s", body)
	}
	return e.Error
}

func containsAll(s string, subs ...string) bool {
	return !slices.ContainsFunc(subs, func(sub string) bool { return !strings.Contains(s, sub) })
}

func newZipWriter(w io.Writer) *zip.Writer { return zip.NewWriter(w) }

func copyEntries(t testing.TB, zw *zip.Writer, z []byte) { renameEntries(t, zw, z, "", "") }

// renameEntries copies every entry of z into zw, replacing the name prefix
// from with to.
func renameEntries(t testing.TB, zw *zip.Writer, z []byte, from, to string) {
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		hdr := f.FileHeader
		hdr.Name = to + strings.TrimPrefix(f.Name, from)
		raw, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.CreateRaw(&hdr)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(w, raw)
	}
}

// rawHeader describes deflated data that claims to inflate to size bytes.
func rawHeader(name string, deflated []byte, size int64) *zip.FileHeader {
	return &zip.FileHeader{Name: name, Method: zip.Deflate, CompressedSize64: uint64(len(deflated)), UncompressedSize64: uint64(size), CRC32: 0}
}
