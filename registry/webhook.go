package registry

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/flowgen-dev/flowgen/internal/addrclass"
	"github.com/flowgen-dev/flowgen/registry/meta"
)

// Webhook is a target that receives the registry's events.
//
// Delivery is at least once and in order: the audit log is the outbox, and
// each target's place in it is a cursor in the metadata store, moved only
// after the target answered 2xx. A failed delivery is retried with
// exponential backoff (WebhookRetry doubling up to 5 minutes) until it
// succeeds; a restart resumes from the cursor. Every request is signed:
// X-Flowgen-Signature is "sha256=" and the hex HMAC-SHA256, keyed by
// Secret, of the X-Flowgen-Timestamp value, a dot, and the body.
//
// Targets cannot be turned against the network the registry sits in: a
// connection goes only to a public unicast address (addrclass.Public, an
// allowlist), checked at configuration and on the address actually
// dialled (so a name that resolves elsewhere is refused too), unless
// AllowPrivate is set; and
// redirects are never followed (a 3xx is a failed delivery).
type Webhook struct {
	// Name identifies the target (its cursor); letters, digits, dashes.
	Name string
	URL  string
	// Secret keys the HMAC signature.
	Secret []byte
	// AllowPrivate allows targets on loopback, link-local and private
	// addresses (an internal receiver; tests).
	AllowPrivate bool
}

// WebhookEvent is the body of a delivery.
type WebhookEvent struct {
	// ID is the event's sequence number in the audit log: increasing, the
	// same on every retry, so receivers can drop duplicates.
	ID      int64     `json:"id"`
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	Version string    `json:"version"`
	Actor   string    `json:"actor"`
	Detail  string    `json:"detail,omitempty"`
}

// webhookTypes maps audit actions to event types; other actions (tokens,
// garbage collection) are not sent.
var webhookTypes = map[string]string{
	"publish":   "version.published",
	"certified": "version.certified",
	"rejected":  "version.rejected",
	"yank":      "version.yanked",
	"deprecate": "version.deprecated",
}

// checkWebhook validates a target's configuration.
func checkWebhook(h Webhook) error {
	if h.Name == "" || !namespaceRE.MatchString(h.Name) {
		return fmt.Errorf("webhook %q: a name of lowercase letters, digits and dashes", h.Name)
	}
	u, err := url.Parse(h.URL)
	switch {
	case err != nil:
		return fmt.Errorf("webhook %s: %w", h.Name, err)
	case u.Scheme != "https" && !(u.Scheme == "http" && h.AllowPrivate):
		return fmt.Errorf("webhook %s: %s: want https (plain http only for an internal target, with private targets allowed)", h.Name, h.URL)
	case u.User != nil:
		return fmt.Errorf("webhook %s: credentials in the URL; use the signature", h.Name)
	case u.Host == "":
		return fmt.Errorf("webhook %s: %s has no host", h.Name, h.URL)
	case len(h.Secret) < 16:
		return fmt.Errorf("webhook %s: the secret must have at least 16 bytes", h.Name)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !h.AllowPrivate && !publicAddr(ip) {
		return fmt.Errorf("webhook %s: %s is not a public address", h.Name, ip)
	}
	if what := addrclass.SpecialName(u.Hostname()); what != "" && !h.AllowPrivate {
		return fmt.Errorf("webhook %s: %s names %s", h.Name, u.Hostname(), what)
	}
	return nil
}

// publicAddr reports whether a webhook may connect to ip: a public
// unicast address, by allowlist (addrclass.Public).
func publicAddr(ip netip.Addr) bool { return addrclass.Public(ip) }

// webhookClient connects only where h may, follows no redirect and gives
// each delivery 30 s.
func webhookClient(h Webhook) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if !h.AllowPrivate && !publicAddr(ip) {
			return fmt.Errorf("webhook %s: refusing to connect to %s, which is not a public address", h.Name, ip)
		}
		return nil
	}}
	return &http.Client{
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, Proxy: nil, ForceAttemptHTTP2: true, MaxIdleConns: 2},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// RunWebhooks delivers events to every configured target until ctx is
// done.
func (s *Server) RunWebhooks(ctx context.Context) {
	done := make(chan struct{})
	for _, h := range s.cfg.Webhooks {
		go func() {
			defer func() { done <- struct{}{} }()
			s.deliver(ctx, h)
		}()
	}
	for range s.cfg.Webhooks {
		<-done
	}
}

// deliver sends h every event after its cursor, in order, forever.
func (s *Server) deliver(ctx context.Context, h Webhook) {
	client := webhookClient(h)
	cursorName := "webhook/" + h.Name
	backoff := s.cfg.WebhookRetry
	for ctx.Err() == nil {
		cursor, err := s.meta.Cursor(ctx, cursorName)
		var events []meta.Event
		if err == nil {
			events, err = s.meta.AuditAfter(ctx, cursor, 100)
		}
		if err != nil {
			s.log.Error("webhook: reading the outbox", slog.String("webhook", h.Name), slog.Any("error", err))
			sleep(ctx, backoff)
			continue
		}
		if len(events) == 0 {
			// Nothing new: look again shortly, or when woken.
			select {
			case <-ctx.Done():
			case <-s.webhookWake:
			case <-time.After(s.cfg.WebhookPoll):
			}
			continue
		}
		for _, e := range events {
			// An event younger than the settle time waits for the next
			// look: concurrent appends may still commit below it.
			if s.now().Sub(e.Time) < s.cfg.WebhookSettle {
				sleep(ctx, s.cfg.WebhookSettle)
				break
			}
			if typ, ok := webhookTypes[e.Action]; ok {
				for {
					err := s.post(ctx, client, h, WebhookEvent{ID: e.Seq, Type: typ, Time: e.Time, Version: e.Subject, Actor: e.Actor, Detail: e.Detail})
					if err == nil {
						s.metrics.webhooks.WithLabelValues(h.Name, "delivered").Inc()
						backoff = s.cfg.WebhookRetry
						break
					}
					s.metrics.webhooks.WithLabelValues(h.Name, "failed").Inc()
					s.log.Warn("webhook: delivery failed; retrying", slog.String("webhook", h.Name), slog.Int64("event", e.Seq), slog.Duration("in", backoff), slog.Any("error", err))
					if !sleep(ctx, backoff) {
						return
					}
					backoff = min(backoff*2, 5*time.Minute)
				}
			}
			// The target has the event: record that even when ctx ended
			// meanwhile, or a graceful stop would send it again.
			if err := s.storeCursor(ctx, cursorName, e.Seq); err != nil {
				s.log.Error("webhook: storing the cursor", slog.String("webhook", h.Name), slog.Any("error", err))
			}
		}
	}
}

// storeCursor records that a webhook's events up to seq were delivered,
// outliving ctx by up to 10 seconds.
func (s *Server) storeCursor(ctx context.Context, name string, seq int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return s.meta.SetCursor(ctx, name, seq)
}

// post sends one event; any answer but 2xx is a failure.
func (s *Server) post(ctx context.Context, client *http.Client, h Webhook, e WebhookEvent) error {
	body, err := json.Marshal(e)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flowgen-registryd")
	req.Header.Set("X-Flowgen-Event", e.Type)
	req.Header.Set("X-Flowgen-Delivery", strconv.FormatInt(e.ID, 10))
	req.Header.Set("X-Flowgen-Timestamp", ts)
	req.Header.Set("X-Flowgen-Signature", SignWebhook(h.Secret, ts, body))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", h.URL, resp.Status)
	}
	return nil
}

// SignWebhook is the X-Flowgen-Signature of a delivery: "sha256=" and the
// hex HMAC-SHA256 of timestamp + "." + body. Receivers compute it and
// compare with hmac.Equal.
func SignWebhook(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// sleep waits d or until ctx is done; false when ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
