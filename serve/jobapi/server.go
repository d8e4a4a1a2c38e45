package jobapi

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/flowgen-dev/flowgen/flowir"
	"github.com/flowgen-dev/flowgen/runtime"
	"github.com/flowgen-dev/flowgen/runtime/store"
)

// Info is what GET /v1/health reports about the server.
type Info struct {
	PID   int      `json:"pid"`
	Store string   `json:"store"`
	Flows []string `json:"flows"`
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Token must be presented as "Authorization: Bearer TOKEN" on every
	// request but /v1/health.
	Token string
	// CheckInput, when set, checks a job's input before Start creates the
	// job; an *flowir.InputError it returns becomes a 422 with every
	// problem.
	CheckInput func(flow string, input []byte) error
	Info       Info
	// Metrics, when set, is served at GET /metrics in Prometheus's text
	// format, without a token (like /v1/health: the server listens on
	// 127.0.0.1 unless told otherwise).
	Metrics prometheus.Gatherer
	// Console, when set, is the web console (serve/console), served
	// at every path outside /v1/ and /metrics to a browser signed in
	// through GET /login?token=TOKEN (Endpoint.ConsoleURL).
	Console http.Handler
}

// maxInput bounds a job input sent to the API.
const maxInput = 16 << 20

// NewHandler serves svc over HTTP:
//
//	GET  /v1/health                       server info (no token needed)
//	GET  /metrics                         Prometheus metrics, when HandlerOptions.Metrics is set (no token needed)
//	POST /v1/jobs                         {"flow","input","key"} -> {"job","created"} (flow: name or name@version;
//	                                      a W3C traceparent header makes the job's trace the caller's)
//	GET  /v1/jobs?state=&flow=&version=&key=&since=&until=&where=path=value&subflows=1&limit=&after=
//	GET  /v1/jobs/{job}                   status and waiting checkpoints
//	GET  /v1/jobs/{job}/inspection
//	POST /v1/jobs/{job}/pause | resume | kill {"reason"} | signal {"node","approved","by","note"}
//	GET  /v1/deadletters
//	POST /v1/deadletters/{id}/requeue | fail {"reason"}
//	GET  /login?token=TOKEN               signs a browser in to the console, when HandlerOptions.Console is set
//	     /...                             the console's pages (serve/console)
//
// Errors are {"code","message"} with 400, 401, 404 (not_found,
// unknown_flow, unknown_version), 409 (key_in_use, dead_letter_taken) or 422 (bad_input,
// with "problems"; undecodable).
func NewHandler(svc Service, opts HandlerOptions) http.Handler {
	h := &handler{svc: svc, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, opts.Info) })
	if opts.Metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("POST /v1/jobs", h.auth(h.start))
	mux.HandleFunc("GET /v1/jobs", h.auth(h.list))
	mux.HandleFunc("GET /v1/jobs/{job}", h.auth(h.job(h.status)))
	mux.HandleFunc("GET /v1/jobs/{job}/inspection", h.auth(h.job(h.inspect)))
	mux.HandleFunc("POST /v1/jobs/{job}/{action}", h.auth(h.job(h.control)))
	mux.HandleFunc("GET /v1/deadletters", h.auth(h.deadLetters))
	mux.HandleFunc("POST /v1/deadletters/{id}/{action}", h.auth(h.takeDeadLetter))
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, apiError{Code: "not_found", Message: r.Method + " " + r.URL.Path + " is not part of the API"})
	})
	if opts.Console != nil {
		mux.HandleFunc("GET /login", h.login)
		mux.Handle("/", h.signedIn(opts.Console))
	}
	return mux
}

type handler struct {
	svc  Service
	opts HandlerOptions
}

// apiError is an error answer.
type apiError struct {
	Code     string                `json:"code"`
	Message  string                `json:"message"`
	Problems []flowir.InputProblem `json:"problems,omitempty"`
	Flow     string                `json:"flow,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	var ie *flowir.InputError
	switch {
	case errors.As(err, &ie):
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Code: "bad_input", Message: err.Error(), Problems: ie.Problems, Flow: ie.Flow})
	case errors.Is(err, runtime.ErrUnknownFlow):
		writeJSON(w, http.StatusNotFound, apiError{Code: "unknown_flow", Message: err.Error()})
	case errors.Is(err, runtime.ErrFlowVersionMissing):
		writeJSON(w, http.StatusNotFound, apiError{Code: "unknown_version", Message: err.Error()})
	case errors.Is(err, runtime.ErrKeyInUse):
		writeJSON(w, http.StatusConflict, apiError{Code: "key_in_use", Message: err.Error()})
	case errors.Is(err, runtime.ErrDeadLetterTaken):
		writeJSON(w, http.StatusConflict, apiError{Code: "dead_letter_taken", Message: err.Error()})
	case errors.Is(err, runtime.ErrUndecodable):
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Code: "undecodable", Message: err.Error()})
	case errors.Is(err, store.ErrNotFound):
		writeJSON(w, http.StatusNotFound, apiError{Code: "not_found", Message: err.Error()})
	case errors.Is(err, errBadRequest), errors.Is(err, runtime.ErrBadQuery):
		writeJSON(w, http.StatusBadRequest, apiError{Code: "bad_request", Message: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, apiError{Code: "internal", Message: err.Error()})
	}
}

var errBadRequest = errors.New("bad request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadRequest}, args...)...)
}

func (h *handler) auth(next http.HandlerFunc) http.HandlerFunc {
	want := []byte("Bearer " + h.opts.Token)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeJSON(w, http.StatusUnauthorized, apiError{Code: "unauthorized", Message: "missing or wrong token: it is in the endpoint file next to the store"})
			return
		}
		next(w, r)
	}
}

func (h *handler) job(next func(http.ResponseWriter, *http.Request, runtime.JobID) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		job, err := runtime.ParseJobID(r.PathValue("job"))
		if err == nil {
			err = next(w, r, job)
		} else {
			err = badRequest("%v", err)
		}
		if err != nil {
			writeError(w, err)
		}
	}
}

// decode reads one JSON value of at most limit bytes into v.
func decode(r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, limit+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	if dec.InputOffset() > limit {
		return badRequest("request body larger than %d bytes", limit)
	}
	return nil
}

type startRequest struct {
	Flow  string          `json:"flow"`
	Input json.RawMessage `json:"input"`
	// Key, when set, starts the job once under it (StartOnce).
	Key string `json:"key,omitempty"`
}

type startResponse struct {
	Job string `json:"job"`
	// Created is false when the key named a job already.
	Created bool `json:"created"`
}

func (h *handler) start(w http.ResponseWriter, r *http.Request) {
	var req startRequest
	err := decode(r, maxInput, &req)
	if err == nil && h.opts.CheckInput != nil {
		err = h.opts.CheckInput(req.Flow, req.Input)
	}
	var job runtime.JobID
	created := false
	if err == nil {
		// A caller's traceparent makes the job's trace part of the caller's.
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		job, created, err = h.svc.StartOnce(ctx, req.Flow, req.Key, req.Input)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	code := http.StatusCreated
	if !created {
		code = http.StatusOK // the key's job, started before
	}
	writeJSON(w, code, startResponse{Job: job.String(), Created: created})
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	q, err := queryFromURL(r.URL.Query())
	var list runtime.JobList
	if err == nil {
		list, err = h.svc.Jobs(r.Context(), q)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// jobView is GET /v1/jobs/{job}: the status and the waiting checkpoints.
type jobView struct {
	runtime.JobStatus
	Waiting []string `json:"waiting,omitempty"`
}

func (h *handler) status(w http.ResponseWriter, r *http.Request, job runtime.JobID) error {
	st, err := h.svc.Status(r.Context(), job)
	if err != nil {
		return err
	}
	view := jobView{JobStatus: st}
	if !st.Done() {
		if view.Waiting, err = h.svc.Waiting(r.Context(), job); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

func (h *handler) inspect(w http.ResponseWriter, r *http.Request, job runtime.JobID) error {
	in, err := h.svc.Inspect(r.Context(), job)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, in)
	return nil
}

type killRequest struct {
	Reason string `json:"reason"`
}

type signalRequest struct {
	Node string `json:"node"`
	runtime.Decision
}

type signalResponse struct {
	Resumed int `json:"resumed"`
}

func (h *handler) control(w http.ResponseWriter, r *http.Request, job runtime.JobID) error {
	ctx := r.Context()
	var err error
	switch action := r.PathValue("action"); action {
	case "pause":
		err = h.svc.Pause(ctx, job)
	case "resume":
		err = h.svc.Resume(ctx, job)
	case "kill":
		var req killRequest
		if err = decode(r, 64<<10, &req); err == nil {
			err = h.svc.Kill(ctx, job, req.Reason)
		}
	case "signal":
		var req signalRequest
		if err = decode(r, 64<<10, &req); err != nil {
			return err
		}
		n, err := h.svc.Signal(ctx, job, req.Node, req.Decision)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, signalResponse{Resumed: n})
		return nil
	default:
		writeJSON(w, http.StatusNotFound, apiError{Code: "not_found", Message: "no action " + strconv.Quote(action) + ": want pause, resume, kill or signal"})
		return nil
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// queryFromURL parses the listing's query parameters.
func queryFromURL(v url.Values) (runtime.JobQuery, error) {
	q := runtime.JobQuery{State: v.Get("state"), Flow: v.Get("flow"), Version: v.Get("version"), Key: v.Get("key"), After: v.Get("after"), Subflows: v.Get("subflows") == "1"}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(t.name); s != "" {
			parsed, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, badRequest("%s: %v", t.name, err)
			}
			*t.dst = parsed
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, badRequest("limit %q: want a positive number", s)
		}
		q.Limit = n
	}
	for _, w := range v["where"] {
		path, value, ok := strings.Cut(w, "=")
		if !ok || path == "" {
			return q, badRequest("where %q: want path=value", w)
		}
		if q.Where == nil {
			q.Where = map[string]string{}
		}
		q.Where[path] = value
	}
	return q, nil
}

// queryToURL is the inverse of queryFromURL.
func queryToURL(q runtime.JobQuery) url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("state", q.State)
	set("flow", q.Flow)
	set("version", q.Version)
	set("key", q.Key)
	set("after", q.After)
	if q.Subflows {
		v.Set("subflows", "1")
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.Format(time.RFC3339Nano))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for path, value := range q.Where {
		v.Add("where", path+"="+value)
	}
	return v
}
