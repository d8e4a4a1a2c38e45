package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/flowgen-dev/flowgen/internal/atomicfile"
	"github.com/flowgen-dev/flowgen/registry/client"
)

// endpointFile is where a running registryd says how to reach it, in its
// data directory (mode 0600: the token is an admin credential that lives
// only as long as that registryd).
const endpointFile = "registryd.api.json"

// endpoint is the endpoint file's content.
type endpoint struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	PID   int    `json:"pid"`
	// CAFile is the TLS certificate to trust when the registry serves
	// HTTPS with a certificate of its own.
	CAFile string `json:"ca_file,omitempty"`
}

func newLocalSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "fgl_" + base64.RawURLEncoding.EncodeToString(b)
}

func absOrEmpty(p string) string {
	if p == "" {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}

func (e endpoint) write(dataDir string) error {
	raw, _ := json.MarshalIndent(e, "", "  ")
	return atomicfile.Write(filepath.Join(dataDir, endpointFile), append(raw, '\n'), 0o600)
}

// remove deletes the endpoint file unless another registryd wrote it since.
func (e endpoint) remove(dataDir string) {
	path := filepath.Join(dataDir, endpointFile)
	if cur, err := readEndpoint(path); err == nil && cur.Token == e.Token {
		os.Remove(path)
	}
}

func readEndpoint(path string) (endpoint, error) {
	var e endpoint
	raw, err := os.ReadFile(path)
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(raw, &e)
}

// errNoRunning: no registryd answers for the data directory.
var errNoRunning = errors.New("no running registryd")

// discover returns a client of the registryd running on dataDir, found
// through its endpoint file, or errNoRunning.
func discover(ctx context.Context, dataDir string) (*client.Client, error) {
	e, err := readEndpoint(filepath.Join(dataDir, endpointFile))
	if err != nil {
		return nil, errNoRunning
	}
	c := client.New(e.URL, e.Token)
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("endpoint file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("endpoint file: %s holds no certificate", e.CAFile)
		}
		c.HTTP = &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.ListTokens(hctx); err != nil {
		return nil, errNoRunning // a stale file: that registryd is gone
	}
	return c, nil
}
