package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/certify"
	"github.com/flowgen-dev/flowgen/internal/flowgenmod"
	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/pull"
	"github.com/flowgen-dev/flowgen/registry/api"
	"github.com/flowgen-dev/flowgen/registry/client"
)

// Environment defaults of the registry flags.
const (
	registryEnv = "FLOWGEN_REGISTRY"
	tokenEnv    = "FLOWGEN_REGISTRY_TOKEN"
)

const registryFlagsHelp = `Registry flags (also from the environment):
  --registry URL   the registry, e.g. http://registry.internal:8700 [` + registryEnv + `]
  --token TOKEN    a registry token [` + tokenEnv + `]
`

func registryFlags(e *env, fs *flag.FlagSet) (reg, token *string) {
	return fs.String("registry", e.getenv(registryEnv), "registry URL ["+registryEnv+"]"),
		fs.String("token", e.getenv(tokenEnv), "registry token ["+tokenEnv+"]")
}

func registryClient(e *env, cmd, reg, token string) (*client.Client, bool) {
	if reg == "" {
		fmt.Fprintf(e.stderr, "flowgen %s: no registry: pass --registry URL or set %s\n", cmd, registryEnv)
		return nil, false
	}
	if token == "" {
		fmt.Fprintf(e.stderr, "flowgen %s: no token: pass --token or set %s (registryd token create makes one)\n", cmd, tokenEnv)
		return nil, false
	}
	return client.New(reg, token), true
}

const publishUsage = `Usage: flowgen publish [--namespace NS] [--no-wait] CONNECTOR_DIR

Packages the connector (as flowgen package does), uploads it to the
registry, follows the registry's own certification and prints its report.
The version becomes pullable only if every check passes there. Publishing
the same bytes again is harmless; other bytes under a published version
are refused (versions are write-once).

The namespace defaults to the first part of the connector id (payments for
payments.charge). When the registry is busy (429 too_many_uploads, 503
busy), publish waits what it asks and sends again, for up to 5 minutes.

Exit status: 0 certified (or accepted, with --no-wait), 1 rejected,
2 usage, upload or registry error.

` + registryFlagsHelp + `
Flags:
`

func runPublish(e *env, args []string) int {
	fs := newFlagSet(e, "publish", publishUsage)
	reg, token := registryFlags(e, fs)
	ns := fs.String("namespace", "", "namespace to publish into (default: the id's first part)")
	mod := fs.String("module", "", "module path for a connector that is not a module root")
	noWait := fs.Bool("no-wait", false, "return once the upload is accepted")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprint(e.stderr, "flowgen publish: name one CONNECTOR_DIR\n\n")
		fs.Usage()
		return exitUsage
	}
	c, ok := registryClient(e, "publish", *reg, *token)
	if !ok {
		return exitUsage
	}
	a, err := artifact.Build(rest[0], artifact.Options{Module: *mod})
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen %v\n", err)
		return exitProblems
	}
	if *ns == "" {
		*ns, _, _ = strings.Cut(a.Manifest.Connector, ".")
	}
	k := api.Key{Namespace: *ns, Connector: a.Manifest.Connector, Version: a.Manifest.ConnectorVersion}
	start := time.Now()
	mj, err := a.Manifest.JSON()
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen publish %s: %v\n", k, err)
		return exitProblems
	}
	c.OnBusy = func(err *api.Error, wait time.Duration) {
		fmt.Fprintf(e.stderr, "  registry busy (%s: %s); sending again in %s\n", err.Code, err.Message, wait)
	}
	v, created, err := c.Publish(e.ctx, k, mj, a.Zip)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen publish %s: %v\n", k, err)
		return exitUsage
	}
	uploaded := time.Since(start)
	what := "uploaded"
	if !created {
		what = "already there with the same digest"
	}
	fmt.Fprintf(e.stderr, "%s %s (%s, %d bytes) in %s\n", what, k, a.Manifest.Digest, a.Manifest.Size, uploaded.Round(time.Millisecond))
	if *noWait {
		fmt.Fprintf(e.stdout, "%s %s\n", k, v.State)
		return exitOK
	}
	v, err = c.Wait(e.ctx, k, 500*time.Millisecond, func(v api.Version) {
		fmt.Fprintf(e.stderr, "  %s: %s\n", v.State, v.Progress)
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen publish %s: %v\n", k, err)
		return exitUsage
	}
	if data, err := c.File(e.ctx, k, api.FileReport); err == nil {
		var r certify.Report
		if json.Unmarshal(data, &r) == nil {
			for _, ch := range r.Checks {
				fmt.Fprintf(e.stdout, "  %-18s %-4s %s\n", ch.Name, ch.Outcome, ch.Summary)
				if ch.Outcome == certify.Fail {
					// The cause, not only the verdict: what the registry saw.
					for _, ev := range ch.Evidence {
						fmt.Fprintf(e.stdout, "      %s\n", strings.ReplaceAll(ev, "\n", "\n      "))
					}
				}
			}
		}
	}
	if v.State != api.Certified {
		fmt.Fprintf(e.stdout, "%s rejected: %s\n", k, v.Reason)
		fmt.Fprintf(e.stdout, "next: %s\n", strings.TrimPrefix(v.Progress, "rejected; "))
		return exitProblems
	}
	fmt.Fprintf(e.stdout, "%s certified in %s: %s@%s\n", k, time.Since(start).Round(time.Millisecond), v.Module, v.ModuleVersion)
	return exitOK
}

const pullUsage = `Usage: flowgen pull [--key PUB] [--policy FILE] [--dir DIR] NAMESPACE/CONNECTOR@VERSION

Downloads a certified connector and checks, before placing anything:
the artifact's digest against the registry's record, the signatures of the
artifact, SBOM, certification report and WebAssembly module against the
registry's key, that the SBOM and report name that artifact and module,
that no check failed, that the connector was certified as a module (unless
the policy sets requireConfined: false) and, with --policy, every rule of
the pull policy against the signed evidence. Any failure is reported in
full and nothing is placed.

The module then goes into DIR as a Go module proxy directory, with the
evidence in DIR/<module>/@v/VERSION.certification/, and, when the
connector requires an unpublished flowgen, the flowgen module the registry
certified it with (checked against the same key). The evidence directory
also holds the connector laid out for flows: its source in source/, its
certified module.wasm and pulled.json. A flow that lists it under
connectors: runs it confined, as that module, with only the capabilities
its spec declares (docs/codegen.md, "Pulled connectors"). For Go programs
that import it, pull prints the go get line that fetches it in your
module, with the environment it needs:
  GOPROXY=file://DIR,<your GOPROXY> GONOSUMDB=MODULE[,github.com/flowgen-dev/flowgen] GOFLAGS=-mod=mod go get MODULE@VERSION

--key is the registry key your platform trusts (PEM); without it the key is
fetched from the registry itself, which only proves the files agree with
each other.

` + registryFlagsHelp + `
Flags:
`

func runPull(e *env, args []string) int {
	fs := newFlagSet(e, "pull", pullUsage)
	reg, token := registryFlags(e, fs)
	keyFile := fs.String("key", "", "the registry's public key (PEM) to trust")
	policyFile := fs.String("policy", "", "pull policy YAML the connector must satisfy")
	dir := fs.String("dir", defaultPullDir(e), "module proxy directory to place the module in")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	k, ok := parseRef(rest)
	if !ok {
		fmt.Fprint(e.stderr, "flowgen pull: name one NAMESPACE/CONNECTOR@VERSION\n\n")
		fs.Usage()
		return exitUsage
	}
	var pol *policy.Policy
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err == nil {
			pol, err = policy.Parse(*policyFile, data)
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen pull: %v\n", err)
			return exitUsage
		}
	}
	opts := pull.Options{Dir: *dir, Policy: pol}
	if *keyFile != "" {
		if opts.Key, err = os.ReadFile(*keyFile); err != nil {
			fmt.Fprintf(e.stderr, "flowgen pull: %v\n", err)
			return exitUsage
		}
	}
	c, ok := registryClient(e, "pull", *reg, *token)
	if !ok {
		return exitUsage
	}
	res, err := pull.Pull(e.ctx, c, k, opts)
	var refused *pull.RefusedError
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(e.stderr, "flowgen pull %v\n", refused)
		return exitProblems
	case err != nil:
		fmt.Fprintf(e.stderr, "flowgen pull %s: %v\n", k, err)
		return exitProblems
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "flowgen pull: warning: %s\n", w)
	}
	v := res.Version
	fmt.Fprintf(e.stderr, "verified %s: digest, 4 signatures (artifact, SBOM, report, module), %d checks passed", k, res.Checks)
	if pol != nil {
		fmt.Fprintf(e.stderr, ", policy %s", *policyFile)
	}
	fmt.Fprintf(e.stderr, "\nplaced %s@%s in %s\n", v.Module, v.ModuleVersion, res.ModuleDir)
	fmt.Fprintf(e.stderr, "placed the connector for flows in %s: list it under a flow's connectors: and it runs confined, as its certified module\n", res.Connector)
	nosum := v.Module
	if res.FlowgenVersion != "" {
		fmt.Fprintf(e.stderr, "placed %s@%s beside it (signed by the same key)\n", flowgenmod.Path, res.FlowgenVersion)
		nosum += "," + flowgenmod.Path
	}
	abs, _ := filepath.Abs(*dir)
	upstream := goEnv(e, "GOPROXY")
	fmt.Fprintf(e.stderr, "in your module, with this environment (the checksum database does not know these modules; go.sum records what you fetched):\n")
	fmt.Fprintf(e.stdout, "GOPROXY=%s GONOSUMDB=%s GOFLAGS=-mod=mod go get %s@%s\n",
		shellQuote("file://"+filepath.ToSlash(abs)+","+upstream), shellQuote(nosum), v.Module, v.ModuleVersion)
	return exitOK
}

func defaultPullDir(e *env) string {
	if d := e.getenv("FLOWGEN_PULL_DIR"); d != "" {
		return d
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "flowgen", "modules")
	}
	return "flowgen-modules"
}

// parseRef reads NAMESPACE/CONNECTOR@VERSION.
func parseRef(args []string) (api.Key, bool) {
	if len(args) != 1 {
		return api.Key{}, false
	}
	name, version, ok1 := strings.Cut(args[0], "@")
	ns, connector, ok2 := strings.Cut(name, "/")
	if !ok1 || !ok2 || ns == "" || connector == "" || version == "" {
		return api.Key{}, false
	}
	return api.Key{Namespace: ns, Connector: connector, Version: strings.TrimPrefix(version, "v")}, true
}

const searchUsage = `Usage: flowgen search [flags] [TEXT]

Lists certified connector versions in the registry that match TEXT (in the
name, provider or summary) and the filters.

` + registryFlagsHelp + `
Flags:
`

func runSearch(e *env, args []string) int {
	fs := newFlagSet(e, "search", searchUsage)
	reg, token := registryFlags(e, fs)
	filters := map[string]*string{}
	for _, f := range []struct{ name, help string }{
		{"namespace", "only this namespace"}, {"provider", "only this provider"},
		{"effects", "Pure, ReadOnly or Effectful"}, {"determinism", "Strict, Stable, BestEffort or Nondeterministic"},
		{"capability", "needs this capability, e.g. http.write"}, {"module", "this Go module path"},
	} {
		filters[f.name] = fs.String(f.name, "", f.help)
	}
	asJSON := fs.Bool("json", false, "print JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	c, ok := registryClient(e, "search", *reg, *token)
	if !ok {
		return exitUsage
	}
	q := url.Values{}
	if len(rest) > 0 {
		q.Set("q", strings.Join(rest, " "))
	}
	for name, v := range filters {
		if *v != "" {
			q.Set(name, *v)
		}
	}
	vs, err := c.Search(e.ctx, q)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen search: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		return writeJSON(e, vs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONNECTOR\tVERSION\tEFFECTS\tDETERMINISM\tPROVIDER\tMODULE\tSUMMARY")
	for _, v := range vs {
		note := v.Summary
		if v.Yanked != "" {
			note = "[yanked] " + note
		} else if v.Deprecated != "" {
			note = "[deprecated] " + note
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Namespace, v.Connector, v.Version, v.Effects, v.Determinism, v.Provider, v.Module, note)
	}
	tw.Flush()
	if len(vs) == 0 {
		fmt.Fprintln(e.stderr, "no certified connector matches")
	}
	return exitOK
}

// goEnv returns go env NAME (empty when the go command fails).
func goEnv(e *env, name string) string {
	out, err := exec.CommandContext(e.ctx, "go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=@+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
