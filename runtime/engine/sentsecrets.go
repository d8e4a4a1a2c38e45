package engine

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/flowgen-dev/flowgen/flowtype"
	"github.com/flowgen-dev/flowgen/internal/leak"
	"github.com/flowgen-dev/flowgen/runtime"
)

// sentSecrets is what an activation's secrets resolved to, shared by its
// Secrets and HTTP capabilities, so that a request carrying a secret, in
// any encoding (internal/leak), to a host its spec does not send it to
// is refused before it leaves. A nil *sentSecrets checks nothing.
type sentSecrets struct {
	hosts map[string][]string // NodeInfo.SecretHosts

	mu       sync.Mutex
	resolved []resolvedSecret
}

type resolvedSecret struct {
	handle string
	raw    string
	value  leak.Value
}

// newSentSecrets binds each declared handle to its hosts: SecretHosts,
// or, as a spec's default is, the node's egress when it has one entry.
func newSentSecrets(info runtime.NodeInfo) *sentSecrets {
	hosts := map[string][]string{}
	for _, h := range info.Secrets {
		hosts[h] = info.SecretHosts[h]
		if len(hosts[h]) == 0 && len(info.Egress) == 1 {
			hosts[h] = info.Egress
		}
	}
	return &sentSecrets{hosts: hosts}
}

// add records that handle resolved to value in this activation.
func (s *sentSecrets) add(handle, value string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.resolved {
		if r.handle == handle {
			return
		}
	}
	s.resolved = append(s.resolved, resolvedSecret{handle, value, leak.NewValue(value)})
}

// check refuses a request to u that carries a secret its spec does not
// send to u's host: in the URL, a header or the body.
func (s *sentSecrets) check(method string, u *url.URL, header http.Header, body []byte) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	resolved := s.resolved
	s.mu.Unlock()
	if len(resolved) == 0 {
		return nil
	}
	target := flowtype.TargetOf(u)
	var text strings.Builder
	text.WriteString(u.String())
	for k, vs := range header {
		for _, v := range vs {
			text.WriteString("\n" + k + ": " + v)
		}
	}
	text.WriteString("\n")
	text.Write(body)
	for _, r := range resolved {
		if flowtype.EgressAllows(s.hosts[r.handle], target) {
			continue
		}
		if form := r.value.Find(text.String()); form != "" {
			return runtime.Errorf(runtime.PolicyDenied, "%s %s carries secret %s (%s), which its spec sends only to %s",
				method, target, r.handle, form, strings.Join(s.hosts[r.handle], ", "))
		}
	}
	return nil
}

// redact returns err with every resolved secret's value, as it is or URL-
// encoded, replaced by "[secret HANDLE]" in its message, keeping its
// kind, status and retry delay; err itself when it shows none.
func (s *sentSecrets) redact(err error) error {
	if s == nil || err == nil {
		return err
	}
	s.mu.Lock()
	resolved := s.resolved
	s.mu.Unlock()
	msg := err.Error()
	var re *runtime.Error
	if errors.As(err, &re) && re.Err != nil {
		msg = re.Err.Error()
	}
	shown := msg
	for _, r := range resolved {
		for _, form := range []string{r.raw, url.PathEscape(r.raw), url.QueryEscape(r.raw)} {
			if form != "" {
				shown = strings.ReplaceAll(shown, form, "[secret "+r.handle+"]")
			}
		}
	}
	if shown == msg {
		return err
	}
	if re == nil {
		return errors.New(shown)
	}
	out := *re
	out.Err = errors.New(shown)
	return &out
}
