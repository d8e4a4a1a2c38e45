package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowgen-dev/flowgen/policy"
	"github.com/flowgen-dev/flowgen/registry/api"
)

// scopeList is a repeatable, comma-separated --scope flag.
type scopeList []string

func (s *scopeList) String() string { return strings.Join(*s, ",") }
func (s *scopeList) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

const tokenUsage = `Usage:
  registryd token create --name N --scope S [--scope S] [--expires D] [--policy FILE]
  registryd token revoke TOKEN_ID
  registryd token list

Manages the registry's API tokens. With --registry URL --token ADMIN_TOKEN
(or REGISTRYD_URL and REGISTRYD_ADMIN_TOKEN) through a running registryd's
admin API; otherwise in its stores directly, which a running registryd
owns when they are embedded. 'registryd token create -h' shows the flags.
`

func token(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return errUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, tokenUsage)
		return nil
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af adminFlags
	af.register(fs)
	switch args[0] {
	case "create":
		var req api.TokenRequest
		fs.StringVar(&req.Name, "name", "", "who the token is for, e.g. ci-payments (required)")
		var scopes scopeList
		fs.Var(&scopes, "scope", "admin, pull or publish:NAMESPACE; repeat or separate with commas (required)")
		expires := fs.Duration("expires", 0, "lifetime, e.g. 720h (default: until revoked)")
		policyFile := fs.String("policy", "", "pull policy YAML to bind to the token (pull scope only)")
		fs.Usage = func() {
			fmt.Fprint(stderr, "Usage: registryd token create --name N --scope S [--expires D] [--policy FILE]\n\nCreates a token and prints its secret once; only a hash is stored. With --registry, through a\nrunning registryd's admin API; else in the stores (which a running registryd owns, if embedded).\n\nFlags:\n")
			fs.PrintDefaults()
		}
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		req.Scopes = scopes
		if *expires > 0 {
			req.ExpiresIn = expires.String()
		}
		if *policyFile != "" {
			data, err := os.ReadFile(*policyFile)
			if err != nil {
				return err
			}
			if _, err := policy.Parse(*policyFile, data); err != nil {
				return err
			}
			req.Policy = string(data)
		}
		a, err := af.open(ctx)
		if err != nil {
			return err
		}
		defer a.Close()
		t, err := a.CreateToken(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created %s (%s) with scopes %s; the secret is shown once:\n", t.ID, t.Name, strings.Join(t.Scopes, ","))
		fmt.Fprintln(stdout, t.Secret)
		return nil
	case "revoke":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("token revoke takes one TOKEN_ID (see registryd token list)")
		}
		a, err := af.open(ctx)
		if err != nil {
			return err
		}
		defer a.Close()
		if _, err := a.RevokeToken(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		return nil
	case "list":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		a, err := af.open(ctx)
		if err != nil {
			return err
		}
		defer a.Close()
		ts, err := a.ListTokens(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED\tSTATUS\tPOLICY")
		for _, t := range ts {
			status := "active"
			switch {
			case !t.Revoked.IsZero():
				status = "revoked " + t.Revoked.Format(time.RFC3339)
			case !t.Expires.IsZero() && !time.Now().Before(t.Expires):
				status = "expired " + t.Expires.Format(time.RFC3339)
			case !t.Expires.IsZero():
				status = "expires " + t.Expires.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", t.ID, t.Name, strings.Join(t.Scopes, ","), t.Created.Format(time.RFC3339), status, t.Policy)
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown token command %q: want create, revoke or list", args[0])
}

// gc runs a garbage collection and prints what it removed.
func gc(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var af adminFlags
	af.register(fs)
	var req api.GCRequest
	fs.BoolVar(&req.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	fs.StringVar(&req.Grace, "grace", "", "keep unreferenced blobs younger than this (default: the server's, 24h)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: registryd gc [--dry-run] [--grace D]\n\nRemoves the blobs no version refers to (what failed uploads stored) once older than the\ngrace period; registryd serve also does it every --janitor-interval. Try --dry-run first.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	a, err := af.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	rep, err := a.CollectGarbage(ctx, req)
	if err != nil {
		return err
	}
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	for _, d := range rep.Removed {
		fmt.Fprintln(stdout, d)
	}
	fmt.Fprintf(stderr, "%d blobs: %d referenced, %d within the grace period; %s %d (%d bytes)\n",
		rep.Blobs, rep.Referenced, rep.Young, verb, len(rep.Removed), rep.RemovedBytes)
	return nil
}
