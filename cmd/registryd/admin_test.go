package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestTokensWhileRunning: with registryd running on embedded storage,
// which owns its metadata file, registryd token says to use the admin API
// instead of failing on a lock; with --registry and an admin token it
// creates, lists and revokes tokens, and a revoked token stops working at
// once, without a restart.
func TestTokensWhileRunning(t *testing.T) {
	t.Parallel()
	repo, _ := filepath.Abs("../..")
	e := &e2e{t: t, repo: repo, bin: buildBinaries(t, repo), dataDir: t.TempDir()}
	e.addr = freeAddr(t)
	e.url = "https://" + e.addr
	e.cert, e.key, e.client = selfSigned(t)
	e.storage = []string{"--data-dir", e.dataDir}
	admin := e.tokenCreate("--name", "ops", "--scope", "admin")
	e.start()
	t.Cleanup(func() {
		e.proc.Process.Signal(syscall.SIGTERM)
		e.proc.Wait()
	})

	// Without --registry, the endpoint file in the data directory leads to
	// the running registry (its store is locked), with a credential that
	// lives as long as that process.
	out, err := e.registryd("token", "list").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ops") {
		t.Fatalf("token list against a running embedded registry: %v\n%s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(e.dataDir, "registryd.api.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("endpoint file: %v %v", fi, err)
	}
	found, err := e.registryd("token", "create", "--name", "found", "--scope", "pull").Output()
	if err != nil || !strings.HasPrefix(string(found), "fgr_") {
		t.Fatalf("token create through the endpoint file: %q %v", found, err)
	}
	// A stale endpoint file (its registryd gone) is not believed.
	stale := filepath.Join(t.TempDir(), "registryd.api.json")
	os.WriteFile(stale, []byte(`{"url":"http://127.0.0.1:1","token":"fgl_x","pid":1}`), 0o600)
	if out, err := exec.Command(filepath.Join(e.bin, "registryd"), "token", "list", "--data-dir", filepath.Dir(stale)).CombinedOutput(); err != nil || !strings.Contains(string(out), "ID") {
		t.Fatalf("a stale endpoint file stopped token list on a free store: %v\n%s", err, out)
	}
	remote := func(args ...string) (string, error) {
		cmd := e.registryd(append(args, "--registry", e.url, "--token", admin)...)
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+e.cert)
		b, err := cmd.Output()
		return strings.TrimSpace(string(b)), err
	}
	secret, err := remote("token", "create", "--name", "leaky", "--scope", "pull")
	if err != nil || !strings.HasPrefix(secret, "fgr_") {
		t.Fatalf("create through the API: %q %v", secret, err)
	}
	get := func(tok string) int {
		req, _ := http.NewRequest("GET", e.url+"/v1/connectors", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(secret); code != http.StatusOK {
		t.Fatalf("the new token: %d", code)
	}
	list, err := remote("token", "list")
	var id string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "leaky" {
			id = f[0]
		}
	}
	if err != nil || id == "" {
		t.Fatalf("list through the API: %v\n%s", err, list)
	}
	if out, err := remote("token", "revoke", id); err != nil || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke through the API: %q %v", out, err)
	}
	if code := get(secret); code != http.StatusUnauthorized {
		t.Fatalf("the revoked token still works: %d", code)
	}
	if out, err := remote("gc", "--dry-run"); err != nil {
		t.Fatalf("gc through the API: %q %v", out, err)
	}
}
