package registry

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flowgen-dev/flowgen/certify"
)

// TestDocumentedLimits: docs/registry-api.md states the upload and
// certification limits this package and certify default to.
func TestDocumentedLimits(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/registry-api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(data)), " ")
	var cfg Config
	if err := checkUploadLimits(&cfg); err != nil {
		t.Fatal(err)
	}
	minutes := func(d time.Duration) string { return fmt.Sprintf("%d minutes", int(d.Minutes())) }
	for _, want := range []string{
		fmt.Sprintf("receives at most %d at once", cfg.MaxConcurrentUploads),
		fmt.Sprintf("one namespace at most %d of them and one token at most %d", cfg.MaxUploadsPerNamespace, cfg.MaxUploadsPerToken),
		fmt.Sprintf("average at least %d KiB a second", cfg.MinUploadRate>>10),
		"end within " + minutes(cfg.UploadDeadline),
		fmt.Sprintf("(default: the processors, at most %d;", DefaultMaxCertifyWorkers),
		fmt.Sprintf("`--certify-timeout` (%s)", strings.TrimSuffix(DefaultCertifyTimeout.String(), "0s")),
		fmt.Sprintf("at most %d fixtures", certify.DefaultMaxFixtures),
		"for " + minutes(certify.DefaultSandboxBudget) + " in all",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/registry-api.md does not say %q", want)
		}
	}
}
