package main

import (
	"net/http"
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

	out, err := e.registryd("token", "list").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--registry URL --token ADMIN_TOKEN") {
		t.Fatalf("token list against a running embedded registry: %v\n%s", err, out)
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
