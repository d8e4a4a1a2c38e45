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
	"github.com/flowgen-dev/flowgen/registry"
	"github.com/flowgen-dev/flowgen/registry/meta"
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

func token(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	fs := flag.NewFlagSet("token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var st storageFlags
	st.register(fs)
	switch args[0] {
	case "create":
		name := fs.String("name", "", "who the token is for, e.g. ci-payments (required)")
		var scopes scopeList
		fs.Var(&scopes, "scope", "admin, pull or publish:NAMESPACE; repeat or separate with commas (required)")
		expires := fs.Duration("expires", 0, "lifetime, e.g. 720h (default: until revoked)")
		policyFile := fs.String("policy", "", "pull policy YAML to bind to the token (pull scope only)")
		fs.Usage = func() {
			fmt.Fprint(stderr, "Usage: registryd token create --name N --scope S [--expires D] [--policy FILE]\n\nCreates a token and prints its secret once; only a hash is stored.\n\nFlags:\n")
			fs.PrintDefaults()
		}
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		var pol string
		if *policyFile != "" {
			data, err := os.ReadFile(*policyFile)
			if err != nil {
				return err
			}
			if _, err := policy.Parse(*policyFile, data); err != nil {
				return err
			}
			pol = string(data)
		}
		now := time.Now()
		var exp time.Time
		if *expires > 0 {
			exp = now.Add(*expires)
		}
		t, secret, err := registry.NewToken(*name, scopes, exp, pol, now)
		if err != nil {
			return err
		}
		m, err := st.openMeta(ctx)
		if err != nil {
			return err
		}
		defer m.Close()
		if err := m.CreateToken(ctx, t); err != nil {
			return err
		}
		m.AppendAudit(ctx, meta.Event{Time: now.UTC(), Actor: "registryd token", Action: "token-create", Subject: t.ID, Detail: t.Name + " " + strings.Join(t.Scopes, ",")})
		fmt.Fprintf(stderr, "created %s (%s) with scopes %s; the secret is shown once:\n", t.ID, t.Name, strings.Join(t.Scopes, ","))
		fmt.Fprintln(stdout, secret)
		return nil
	case "revoke":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("token revoke takes one TOKEN_ID (see registryd token list)")
		}
		m, err := st.openMeta(ctx)
		if err != nil {
			return err
		}
		defer m.Close()
		if err := m.RevokeToken(ctx, fs.Arg(0), time.Now().UTC()); err != nil {
			return err
		}
		m.AppendAudit(ctx, meta.Event{Time: time.Now().UTC(), Actor: "registryd token", Action: "token-revoke", Subject: fs.Arg(0)})
		fmt.Fprintf(stdout, "revoked %s\n", fs.Arg(0))
		return nil
	case "list":
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		m, err := st.openMeta(ctx)
		if err != nil {
			return err
		}
		defer m.Close()
		ts, err := m.ListTokens(ctx)
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
			case !t.Expires.IsZero() && !t.Valid(time.Now()):
				status = "expired " + t.Expires.Format(time.RFC3339)
			case !t.Expires.IsZero():
				status = "expires " + t.Expires.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", t.ID, t.Name, strings.Join(t.Scopes, ","), t.Created.Format(time.RFC3339), status, t.Policy != "")
		}
		return tw.Flush()
	}
	return fmt.Errorf("unknown token command %q: want create, revoke or list", args[0])
}
