package registry_test

import (
	"bytes"
	"compress/flate"
	"context"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/api"
)

// TestBadInputIsRefusedAndChangesNothing: every bad request gets a clear
// 4xx naming the problem, and storage, metadata and the audit log are
// exactly as before.
func TestBadInputIsRefusedAndChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, diskStores(t))
	ctx := context.Background()

	// One good version exists, so that replays and conflicts have something
	// to hit.
	good := craft(t, "payments.charge", "2.1.0", validFiles("good")...)
	if code, body := h.publish(h.publisher, "payments", good); code != http.StatusAccepted {
		t.Fatalf("good upload: %d %s", code, body)
	}
	revoked := h.token("old-ci", []string{"publish:payments"}, "")
	tok, _ := h.meta.TokenByHash(ctx, registry.HashToken(revoked))
	h.meta.RevokeToken(ctx, tok.ID, time.Now())
	expiredTok, expired, _ := registry.NewToken("expired-ci", []string{"publish:payments"}, time.Now().Add(-time.Hour), "", time.Now().Add(-2*time.Hour))
	h.meta.CreateToken(ctx, expiredTok)

	fresh := func(extra string) *artifact.Artifact {
		return craft(t, "payments.charge", "3.0.0", validFiles(extra)...)
	}
	send := func(token, path string, parts ...part) (int, []byte) {
		ctype, body := multipartBody(t, parts...)
		return h.do("PUT", path, token, ctype, bytes.NewReader(body))
	}
	upload := func(token string, a *artifact.Artifact) func() (int, []byte) {
		return func() (int, []byte) { return h.publish(token, "payments", a) }
	}
	withManifest := func(edit func(m *artifact.Manifest)) func() (int, []byte) {
		a := fresh("m")
		edit(&a.Manifest)
		return func() (int, []byte) {
			return send(h.publisher, versionPath("payments", "payments.charge", "3.0.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}
	}
	p300 := versionPath("payments", "payments.charge", "3.0.0")
	deflateBomb := func() []byte { // 64 MiB of zeros, deflated to ~64 KiB
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestCompression)
		w.Write(make([]byte, 64<<20))
		w.Close()
		return b.Bytes()
	}

	cases := []struct {
		name   string
		do     func() (int, []byte)
		status int
		says   string
	}{
		{"no token", upload("", fresh("a")), 401, "needs a token"},
		{"unknown token", upload("fgr_notatoken", fresh("a")), 401, "unknown token"},
		{"revoked token", upload(revoked, fresh("a")), 401, "revoked"},
		{"expired token", upload(expired, fresh("a")), 401, "expired"},
		{"pull token publishing", upload(h.puller, fresh("a")), 403, "may not publish"},
		{"token for another namespace", upload(h.other, fresh("a")), 403, `namespace "payments"`},
		{"wrong content type", func() (int, []byte) {
			return h.do("PUT", p300, h.publisher, "application/zip", bytes.NewReader(fresh("a").Zip))
		}, 415, "multipart/form-data"},
		{"malformed version", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, versionPath("payments", "payments.charge", "3.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "semantic version"},
		{"version with v prefix", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, versionPath("payments", "payments.charge", "v3.0.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "no v prefix"},
		{"namespace with an encoded slash", func() (int, []byte) {
			a := fresh("a")
			return send(h.admin, versionPath("pay%2Fments", "payments.charge", "3.0.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "namespace"},
		{"namespace in upper case", func() (int, []byte) {
			a := fresh("a")
			return send(h.admin, versionPath("Payments", "payments.charge", "3.0.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "namespace"},
		{"connector id with ..", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, versionPath("payments", "payments..charge", "3.0.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "connector"},
		{"zip before manifest", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, p300, zipPart(a.Zip), manifestPart(t, a.Manifest))
		}, 400, `want "manifest"`},
		{"no parts at all", func() (int, []byte) { return send(h.publisher, p300) }, 400, "manifest"},
		{"manifest is not JSON", func() (int, []byte) {
			return send(h.publisher, p300, part{api.PartManifest, "application/json", []byte("{not json")}, zipPart(fresh("a").Zip))
		}, 400, "manifest"},
		{"manifest with an unknown field", func() (int, []byte) {
			return send(h.publisher, p300, part{api.PartManifest, "application/json", []byte(`{"format":"flowgen.dev/artifact/v1","surprise":1}`)}, zipPart(fresh("a").Zip))
		}, 400, "surprise"},
		{"manifest part too large", func() (int, []byte) {
			return send(h.publisher, p300, part{api.PartManifest, "application/json", bytes.Repeat([]byte(" "), 9<<20)}, zipPart(fresh("a").Zip))
		}, 413, "manifest part"},
		{"manifest names another connector", withManifest(func(m *artifact.Manifest) { m.Connector = "payments.refund" }), 400, "connector"},
		{"manifest names another version", withManifest(func(m *artifact.Manifest) { m.ConnectorVersion = "3.0.1" }), 400, "connector_version"},
		{"manifest of another format", withManifest(func(m *artifact.Manifest) { m.Format = "zip/v0" }), 400, "format"},
		{"manifest digest malformed", withManifest(func(m *artifact.Manifest) { m.Digest = "md5:abc" }), 400, "invalid digest"},
		{"manifest module path invalid", withManifest(func(m *artifact.Manifest) { m.Module = "../../etc" }), 400, "malformed module path"},
		{"declared size over the limit", withManifest(func(m *artifact.Manifest) { m.Size = 1 << 40 }), 413, "at most"},
		{"digest mismatch", withManifest(func(m *artifact.Manifest) { m.Digest = good.Manifest.Digest }), 400, "digest mismatch"},
		{"zip larger than declared", withManifest(func(m *artifact.Manifest) { m.Size -= 10 }), 413, "larger than the manifest"},
		{"truncated upload", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, p300, manifestPart(t, a.Manifest), zipPart(a.Zip[:len(a.Zip)/2]))
		}, 400, ""},
		{"truncated zip", func() (int, []byte) {
			a := fresh("a")
			a.Zip = a.Zip[:len(a.Zip)-30]
			a.Manifest.Digest, a.Manifest.Size = artifact.Digest(a.Zip), int64(len(a.Zip))
			return send(h.publisher, p300, manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "zip"},
		{"zip with ../ paths", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "../../escape.go", data: []byte("package x")})...)), 400, "escape.go"},
		{"zip with a .. path inside the module", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "sub/../../x.go", data: []byte("package x")})...)), 400, "invalid"},
		{"zip with an absolute path", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "/etc/passwd", data: []byte("root")})...)), 400, "/etc/passwd"},
		{"zip with a symlink", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "link", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777})...)), 400, "not a regular file"},
		{"zip bomb", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "zeros.bin", data: make([]byte, artifact.MaxUnpackedSize+1)})...)), 400, "unpack"},
		{"zip bomb lying about its size", func() (int, []byte) {
			a := craftRaw(t, "payments.charge", "3.0.0", "zeros.bin", deflateBomb(), 16)
			return send(h.publisher, p300, manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "zeros.bin"},
		{"zip with a file the manifest does not list", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("a"), entry{name: "extra.go", data: []byte("package x"), unlisted: true})...)), 400, "extra.go"},
		{"manifest lists a file the zip lacks", func() (int, []byte) {
			a := fresh("a")
			a.Manifest.Files = append(a.Manifest.Files, artifact.File{Path: "ghost.go", SHA256: sha(nil)})
			return send(h.publisher, p300, manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "ghost.go"},
		{"no connector.yaml", upload(h.publisher, craft(t, "payments.charge", "3.0.0", entry{name: "go.mod", data: []byte("module x\n")})), 400, "connector.yaml"},
		{"content after the artifact part", func() (int, []byte) {
			a := fresh("a")
			return send(h.publisher, p300, manifestPart(t, a.Manifest), zipPart(a.Zip), part{"extra", "text/plain", []byte("x")})
		}, 400, "after"},
		{"another digest for an existing version", upload(h.publisher, craft(t, "payments.charge", "2.1.0", validFiles("different")...)), 409, "write-once"},
		{"module path of another connector", func() (int, []byte) {
			a := craft(t, "payments.refund", "2.1.0", validFiles("r")...)
			a = withModule(t, a, good.Manifest.Module)
			return send(h.publisher, versionPath("payments", "payments.refund", "2.1.0"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 409, "already published"},
		{"huge JSON body", func() (int, []byte) {
			return h.do("POST", versionPath("payments", "payments.charge", "2.1.0")+"/yank", h.publisher, "application/json",
				strings.NewReader(`{"reason":"`+strings.Repeat("x", 1<<20)+`"}`))
		}, 413, "JSON body"},
		{"yank without a reason", func() (int, []byte) {
			return h.do("POST", versionPath("payments", "payments.charge", "2.1.0")+"/yank", h.publisher, "application/json", strings.NewReader(`{"reason":"  "}`))
		}, 400, "reason"},
		{"yank with a pull token", func() (int, []byte) {
			return h.do("POST", versionPath("payments", "payments.charge", "2.1.0")+"/yank", h.puller, "application/json", strings.NewReader(`{"reason":"x"}`))
		}, 403, "may not yank"},
		{"deprecate as form data", func() (int, []byte) {
			return h.do("POST", versionPath("payments", "payments.charge", "2.1.0")+"/deprecate", h.publisher, "application/x-www-form-urlencoded", strings.NewReader(`reason=x`))
		}, 415, "application/json"},
		{"read without a token", func() (int, []byte) { return h.do("GET", "/v1/connectors", "", "", nil) }, 401, "token"},
		{"unknown file of a version", func() (int, []byte) {
			return h.do("GET", versionPath("payments", "payments.charge", "2.1.0")+"/files/..%2F..%2Fetc%2Fpasswd", h.puller, "", nil)
		}, 404, "no file"},
		// Every module-zip rule applies at upload, before anything runs.
		{"names that collide case-insensitively", upload(h.publisher, craft(t, "payments.charge", "3.0.0",
			append(validFiles("case"), entry{name: "types_gen.go", data: []byte("package x\n")}, entry{name: "TYPES_GEN.GO", data: []byte("package x\n")})...)),
			400, "case-insensitive file name collision"},
		{"built against another flowgen", upload(h.publisher, craft(t, "payments.charge", "3.0.0",
			entry{name: "connector.yaml", data: []byte("id: crafted\n")},
			entry{name: "go.mod", data: []byte("module crafted\n\nrequire github.com/flowgen-dev/flowgen v0.0.0-00010101000000-000000000001\n")})),
			400, "this registry certifies with and serves"},
		// Nothing in an artifact decides how certification builds it.
		{"a go.work", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("work"), entry{name: "go.work", data: []byte("go 1.26\n\nuse .\n")})...)), 400, "go.work: a workspace file"},
		{"a nested go.work.sum", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("worksum"), entry{name: "sub/go.work.sum", data: []byte("")})...)), 400, "sub/go.work.sum"},
		{"a vendor directory", upload(h.publisher, craft(t, "payments.charge", "3.0.0", append(validFiles("vendor"), entry{name: "vendor/modules.txt", data: []byte("# x\n")})...)), 400, "vendor/modules.txt"},
		{"a toolchain line", upload(h.publisher, craft(t, "payments.charge", "3.0.0",
			entry{name: "connector.yaml", data: []byte("id: crafted\n")}, entry{name: "go.mod", data: []byte("module crafted\n\ngo 1.26\n\ntoolchain go1.26.1\n")})), 400, "go.mod:5: toolchain go1.26.1"},
		{"a replace directive", upload(h.publisher, craft(t, "payments.charge", "3.0.0",
			entry{name: "connector.yaml", data: []byte("id: crafted\n")}, entry{name: "go.mod", data: []byte("module crafted\n\nreplace example.com/x => ../x\n")})), 400, "go.mod:3: replace example.com/x"},
		{"a godebug directive", upload(h.publisher, craft(t, "payments.charge", "3.0.0",
			entry{name: "connector.yaml", data: []byte("id: crafted\n")}, entry{name: "go.mod", data: []byte("module crafted\n\ngodebug x509sha1=1\n")})), 400, "godebug x509sha1=1"},
		{"build metadata in the version", func() (int, []byte) {
			a := craft(t, "payments.charge", "3.0.0", validFiles("meta")...)
			return send(h.publisher, versionPath("payments", "payments.charge", "3.0.0+build.7"), manifestPart(t, a.Manifest), zipPart(a.Zip))
		}, 400, "has build metadata"},
		{"a body that ends inside the artifact", func() (int, []byte) {
			a := fresh("cut")
			ctype, body := multipartBody(t, manifestPart(t, a.Manifest), zipPart(a.Zip))
			cut := bytes.Index(body, a.Zip) + len(a.Zip)/2
			return h.do("PUT", p300, h.publisher, ctype, bytes.NewReader(body[:cut]))
		}, 400, "ended early"},
		// To a puller an uncertified version does not exist.
		{"artifact of an uncertified version", func() (int, []byte) {
			return h.do("GET", versionPath("payments", "payments.charge", "2.1.0")+"/files/artifact.zip", h.puller, "", nil)
		}, 404, "no version payments/payments.charge@2.1.0"},
		{"audit log with a pull token", func() (int, []byte) { return h.do("GET", "/v1/audit", h.puller, "", nil) }, 403, "admin"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := h.snapshot()
			code, body := c.do()
			if code != c.status {
				t.Fatalf("status %d, want %d: %s", code, c.status, body)
			}
			e := apiError(t, body)
			if !strings.Contains(e.Message, c.says) {
				t.Errorf("message %q does not say %q", e.Message, c.says)
			}
			if after := h.snapshot(); after != before {
				t.Errorf("storage changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	t.Run("replayed upload", func(t *testing.T) {
		before := h.snapshot()
		code, body := h.publish(h.publisher, "payments", good)
		if code != http.StatusOK || !strings.Contains(string(body), good.Manifest.Digest) {
			t.Fatalf("replay: %d %s", code, body)
		}
		if after := h.snapshot(); after != before {
			t.Errorf("a replay changed storage:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// craftRaw builds an artifact with one file whose deflated bytes are given
// as is and whose header and manifest claim size bytes.
func craftRaw(t testing.TB, connector, version, name string, deflated []byte, size int64) *artifact.Artifact {
	a := craft(t, connector, version, validFiles("raw")...)
	var buf bytes.Buffer
	zw := newZipWriter(&buf)
	copyEntries(t, zw, a.Zip)
	prefix := a.Manifest.Module + "@" + a.Manifest.Version + "/"
	w, err := zw.CreateRaw(rawHeader(prefix+name, deflated, size))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(deflated)
	zw.Close()
	a.Zip = buf.Bytes()
	a.Manifest.Files = append(a.Manifest.Files, artifact.File{Path: name, SHA256: sha(make([]byte, size)), Size: size})
	a.Manifest.Digest, a.Manifest.Size = artifact.Digest(a.Zip), int64(len(a.Zip))
	return a
}

// withModule re-roots a crafted artifact under another module path.
func withModule(t testing.TB, a *artifact.Artifact, mod string) *artifact.Artifact {
	old := a.Manifest.Module + "@" + a.Manifest.Version + "/"
	var buf bytes.Buffer
	zw := newZipWriter(&buf)
	renameEntries(t, zw, a.Zip, old, mod+"@"+a.Manifest.Version+"/")
	zw.Close()
	m := a.Manifest
	m.Module = mod
	m.Digest, m.Size = artifact.Digest(buf.Bytes()), int64(buf.Len())
	return &artifact.Artifact{Zip: buf.Bytes(), Manifest: m}
}
