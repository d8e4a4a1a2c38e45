package recorder

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/internal/httpfixture"
)

// Mode is how the provider answers a session's HTTP requests.
type Mode int

const (
	// Cassette answers each delivery's requests with its recorded
	// exchanges, strictly in order; any other request is refused and noted.
	Cassette Mode = iota
	// Provider answers a request with a recorded exchange of the same
	// method and URL, in any order and as often as asked, as a live
	// provider would answer duplicates.
	Provider
)

// RefuseTimeout is Planned.Refuse for a provider that never answers.
const RefuseTimeout = -1

// Planned is one delivery and what the provider recorded for it.
type Planned struct {
	wire.Delivery
	Exchanges []httpfixture.Exchange
	// Refuse, when not 0, answers every HTTP request of the delivery
	// with that status (RefuseTimeout: never), as a provider that
	// refuses or fails; the request is recorded as sent, and changes
	// nothing.
	Refuse int
}

// Session is what one harness process runs against a world.
type Session struct {
	World       *World
	Deliveries  []Planned
	Concurrency int
	Mode        Mode
	// Fresh resets the world before each delivery (each fixture starts
	// from nothing).
	Fresh bool
	// Module is the module the harness runs and how (wire.Module).
	Module wire.Module
	// LoseEffect, when not 0, loses the answer to each delivery's
	// LoseEffect-th request that took effect (1 for the first): the
	// provider applied it, and the connector sees a timeout, as when a
	// connection drops after the provider acted.
	LoseEffect int

	mu       sync.Mutex
	results  map[int]wire.Result
	order    []int // result ids in arrival order
	cursor   map[int]int
	problems map[int][]string
	repeats  map[int]int
	protocol []string
	resetErr error
	events   []wire.Event
	effected map[int]int          // requests that took effect, per delivery
	served   map[int]map[int]bool // recorded exchanges answered, per delivery (Provider)
}

// Outcome is what a session observed.
type Outcome struct {
	// Results by delivery id; a delivery missing here never reported.
	Results map[int]wire.Result
	// Problems by delivery id: requests that did not match the recording,
	// recorded exchanges never requested (Cassette mode).
	Problems map[int][]string
	// Protocol lists what the harness did that the protocol forbids
	// (results out of order, twice, for unknown deliveries).
	Protocol []string
	// Repeats counts, per delivery, requests beyond its recording that
	// repeat the last recorded one (Cassette mode): the connector retrying
	// by itself.
	Repeats map[int]int
	// Events are the module's attempts to reach what it may not, as the
	// host in the harness refused and reported them.
	Events []wire.Event
}

func (s *Session) init() {
	if s.results == nil {
		s.results, s.cursor, s.problems, s.repeats = map[int]wire.Result{}, map[int]int{}, map[int][]string{}, map[int]int{}
		s.effected, s.served = map[int]int{}, map[int]map[int]bool{}
	}
}

// Outcome returns what the session observed so far, with each delivery's
// unused recorded exchanges (Cassette mode) among its problems.
func (s *Session) Outcome() Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	out := Outcome{Results: map[int]wire.Result{}, Problems: map[int][]string{}, Protocol: slices.Clone(s.protocol), Repeats: maps.Clone(s.repeats), Events: slices.Clone(s.events)}
	for id, r := range s.results {
		out.Results[id] = r
	}
	for _, d := range s.Deliveries {
		p := slices.Clone(s.problems[d.ID])
		if s.Mode == Cassette && len(p) == 0 {
			if next := s.cursor[d.ID]; next < len(d.Exchanges) {
				ex := d.Exchanges[next]
				p = append(p, fmt.Sprintf("%d recorded exchange(s) never requested, starting with %s %s", len(d.Exchanges)-next, ex.Request.Method, httpfixture.Expand(ex.Request.URL, d.Key)))
			}
		}
		if len(p) > 0 {
			out.Problems[d.ID] = p
		}
	}
	if s.resetErr != nil {
		out.Protocol = append(out.Protocol, "resetting the world: "+s.resetErr.Error())
	}
	return out
}

// current is the delivery that requests are attributed to: the first that
// has not reported (all deliveries of a concurrent session share one key
// and one recording, so any of them is the same).
func (s *Session) current() *Planned {
	for i := range s.Deliveries {
		if _, done := s.results[s.Deliveries[i].ID]; !done {
			return &s.Deliveries[i]
		}
	}
	if len(s.Deliveries) == 0 {
		return nil
	}
	return &s.Deliveries[len(s.Deliveries)-1]
}

// sender is the delivery a request names (wire.HTTPRequest.Delivery),
// or, when it names none the session runs, current.
func (s *Session) sender(named int) *Planned {
	if named > 0 {
		for i := range s.Deliveries {
			if s.Deliveries[i].ID == named-1 {
				return &s.Deliveries[i]
			}
		}
	}
	return s.current()
}

// ServeHTTP serves the wire protocol.
func (s *Session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.init()
	s.mu.Unlock()
	r.Body = http.MaxBytesReader(w, r.Body, wire.MaxBody)
	var out any
	var err error
	switch r.URL.Path {
	case wire.PathWork:
		out = s.work()
	case wire.PathResult:
		err = decode(r, func(res wire.Result) { s.result(r.Context(), res) })
	case wire.PathHTTP:
		err = decode(r, func(req wire.HTTPRequest) { out = s.http(req) })
	case wire.PathKVGet:
		err = decode(r, func(req wire.KVRequest) {
			v, ok := s.World.kvGet(req.Key)
			out = wire.KVResponse{Value: v, Found: ok}
		})
	case wire.PathKVPut:
		err = decode(r, func(req wire.KVRequest) { s.World.kvPut(s.attribution(), req.Key, req.Value) })
	case wire.PathDedupe:
		err = decode(r, func(req wire.DedupeRequest) { out = wire.DedupeResponse{Absent: s.World.putIfAbsent(req.Key, req.TTL)} })
	case wire.PathBlobRead:
		err = decode(r, func(req wire.BlobRequest) {
			v, ok := s.World.blobRead(req.Name)
			out = wire.BlobResponse{Data: v, Missing: !ok}
		})
	case wire.PathBlobWrite:
		err = decode(r, func(req wire.BlobRequest) { s.World.blobWrite(s.attribution(), req.Name, req.Data) })
	case wire.PathDB:
		err = decode(r, func(req wire.DBRequest) { out = s.db(r.Context(), req) })
	case wire.PathEvent:
		err = decode(r, func(ev wire.Event) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.events) < maxEvents {
				s.events = append(s.events, ev)
			}
		})
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if out == nil {
		out = struct{}{}
	}
	json.NewEncoder(w).Encode(out)
}

// decode reads a JSON body of type T strictly and hands it to f.
func decode[T any](r *http.Request, f func(T)) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s: %w", r.URL.Path, err)
	}
	f(v)
	return nil
}

// maxEvents bounds the events a session keeps.
const maxEvents = 1000

func (s *Session) work() wire.Work {
	w := wire.Work{Concurrency: max(s.Concurrency, 1), Module: s.Module}
	var now time.Time
	if s.World != nil {
		now = s.World.clock()
	}
	for _, d := range s.Deliveries {
		// A world whose clock moved past the logical time (a late
		// redelivery) calls the activation that much later.
		if !d.Clock.IsZero() && now.After(d.Now) {
			d.Clock = d.Clock.Add(now.Sub(d.Now))
		}
		w.Deliveries = append(w.Deliveries, d.Delivery)
	}
	return w
}

// attribution is the idempotency key effects are counted against now.
func (s *Session) attribution() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.current(); d != nil {
		return d.Key
	}
	return ""
}

func (s *Session) result(ctx context.Context, res wire.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	known := slices.ContainsFunc(s.Deliveries, func(d Planned) bool { return d.ID == res.ID })
	_, dup := s.results[res.ID]
	switch {
	case !known:
		s.protocol = append(s.protocol, fmt.Sprintf("a result for delivery %d, which was never given", res.ID))
		return
	case dup:
		s.protocol = append(s.protocol, fmt.Sprintf("a second result for delivery %d", res.ID))
		return
	case s.Concurrency <= 1 && s.current().ID != res.ID:
		s.protocol = append(s.protocol, fmt.Sprintf("a result for delivery %d while delivery %d was running", res.ID, s.current().ID))
		return
	}
	s.results[res.ID] = res
	s.order = append(s.order, res.ID)
	if s.Fresh && len(s.results) < len(s.Deliveries) {
		if err := s.World.Reset(ctx); err != nil && s.resetErr == nil {
			s.resetErr = err
		}
	}
}

func (s *Session) http(in wire.HTTPRequest) wire.HTTPResponse {
	s.mu.Lock()
	d := s.sender(in.Delivery)
	s.mu.Unlock()
	if d == nil {
		return wire.HTTPResponse{Refused: "no delivery is running"}
	}
	header := http.Header{}
	for k, vs := range in.Header {
		ck := http.CanonicalHeaderKey(k)
		header[ck] = append(header[ck], vs...)
	}
	req := &Request{Method: in.Method, URL: in.URL, Header: header, Body: in.Body}
	if d.Refuse != 0 {
		if !s.World.record(d.ID, d.Key, req) {
			return wire.HTTPResponse{Refused: fmt.Sprintf("egress to %s is not allowed", req.Host)}
		}
		if d.Refuse == RefuseTimeout {
			return wire.HTTPResponse{Timeout: true}
		}
		resp := wire.HTTPResponse{Status: d.Refuse, Header: map[string][]string{}, Body: []byte(`{"error":{"message":"` + http.StatusText(d.Refuse) + `"}}`)}
		if d.Refuse == http.StatusTooManyRequests || d.Refuse == http.StatusServiceUnavailable {
			resp.Header["Retry-After"] = []string{"1"}
		}
		s.World.liveHeaders(resp.Header, resp.Body, in.Clock)
		return resp
	}
	if !s.World.http(d.ID, d.Key, d.Input, req) {
		return wire.HTTPResponse{Refused: fmt.Sprintf("egress to %s is not allowed", req.Host)}
	}
	// A live provider answers a read with what earlier writes left.
	if s.Mode == Provider && !req.Write && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		if body, ok := s.World.held(req.URL); ok {
			resp := wire.HTTPResponse{Status: http.StatusOK, Header: map[string][]string{}, Body: body}
			s.World.liveHeaders(resp.Header, resp.Body, in.Clock)
			return resp
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ex, problem := s.answer(d, req)
	if problem != "" {
		s.problems[d.ID] = append(s.problems[d.ID], problem)
		return wire.HTTPResponse{Refused: problem}
	}
	if ex.Response.Timeout {
		return wire.HTTPResponse{Timeout: true}
	}
	if req.Effect {
		if s.effected[d.ID]++; s.effected[d.ID] == s.LoseEffect {
			return wire.HTTPResponse{Timeout: true}
		}
	}
	resp := wire.HTTPResponse{Status: ex.Response.Status, Header: map[string][]string{}, Body: ex.ResponseBody()}
	for k, v := range ex.Response.Headers {
		resp.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	s.World.liveHeaders(resp.Header, resp.Body, in.Clock)
	if req.Token {
		s.World.issued(d.Key, resp.Body)
	}
	return resp
}

// answer finds the recorded exchange that answers req, or says why none
// does.
func (s *Session) answer(d *Planned, req *Request) (httpfixture.Exchange, string) {
	if s.Mode == Cassette {
		next := s.cursor[d.ID]
		if next >= len(d.Exchanges) {
			if n := len(d.Exchanges); n > 0 && d.Exchanges[n-1].SameTarget(req.Method, req.URL, d.Key) {
				s.repeats[d.ID]++
			}
			return httpfixture.Exchange{}, fmt.Sprintf("unexpected request %s %s: the fixture records %d exchange(s)", req.Method, req.URL, len(d.Exchanges))
		}
		s.cursor[d.ID] = next + 1
		ex := d.Exchanges[next]
		if diffs := ex.Diff(req.Method, req.URL, req.Header, req.Body, d.Key); len(diffs) > 0 {
			return ex, fmt.Sprintf("request %d (%s %s) does not match the recording:\n  %s", next+1, req.Method, req.URL, strings.Join(diffs, "\n  "))
		}
		return ex, ""
	}
	// The recorded exchanges of this request: a live provider answers a
	// repeated request as the recording goes on (a 429, then the
	// success), each answer once, those that match the request to the
	// letter first, and the last one from then on.
	var exact, same []int
	for i, ex := range d.Exchanges {
		if ex.SameTarget(req.Method, req.URL, d.Key) {
			same = append(same, i)
			if len(ex.Diff(req.Method, req.URL, req.Header, req.Body, d.Key)) == 0 {
				exact = append(exact, i)
			}
		}
	}
	if len(same) == 0 {
		// A live provider answers what no fixture recorded (inputs
		// generated from the schemas reach such requests): a write
		// succeeds, a read finds nothing.
		var ex httpfixture.Exchange
		ex.Response.Status = http.StatusNotFound
		if req.Write {
			ex.Response.Status = http.StatusOK
			ex.Response.Body = json.RawMessage("{}")
		}
		return ex, ""
	}
	if s.served[d.ID] == nil {
		s.served[d.ID] = map[int]bool{}
	}
	served := s.served[d.ID]
	unserved := func(of []int) int {
		for _, i := range of {
			if !served[i] {
				return i
			}
		}
		return -1
	}
	// An answer recorded for another body at the same target serves
	// only a request no exact recording matches.
	pick := unserved(exact)
	switch {
	case pick >= 0:
	case len(exact) > 0:
		pick = exact[len(exact)-1]
	default:
		if pick = unserved(same); pick < 0 {
			pick = same[len(same)-1]
		}
	}
	served[pick] = true
	return d.Exchanges[pick], ""
}

func (s *Session) db(ctx context.Context, req wire.DBRequest) wire.DBResponse {
	if s.World.DB == nil {
		return wire.DBResponse{Error: "no fixture database: declare fixtureEnv.database in the spec"}
	}
	key := s.attribution()
	s.World.mu.Lock()
	defer s.World.mu.Unlock()
	resp, changed := s.World.DB.Do(ctx, req)
	if req.Exec && s.World.ReadOnly {
		s.World.violate("a database exec from a connector that may only read: " + firstLine(req.Query))
	}
	if changed {
		s.World.effect(key)
	}
	return resp
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}

// Serve answers the session's protocol on ln until ctx is done or Close.
func Serve(ctx context.Context, ln net.Listener, s *Session) (stop func()) {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	return func() {
		srv.Close()
		<-done
	}
}
