package jobapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime"
)

// The dead-letter routes:
//
//	GET  /v1/deadletters                      the dead letters, oldest first
//	POST /v1/deadletters/{id}/requeue         -> {"message"}
//	POST /v1/deadletters/{id}/fail {"reason"} -> {"message"}
//
// A dead letter taken the other way is 409 dead_letter_taken; failing one
// whose task does not decode is 422 undecodable.

type deadLetterList struct {
	DeadLetters []runtime.DeadLetter `json:"deadLetters"`
}

type failRequest struct {
	Reason string `json:"reason"`
}

type takeResponse struct {
	// Message is the id of the message that carries the activation on.
	Message string `json:"message"`
}

func (h *handler) deadLetters(w http.ResponseWriter, r *http.Request) {
	list, err := h.svc.DeadLetters(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, deadLetterList{DeadLetters: list})
}

func (h *handler) takeDeadLetter(w http.ResponseWriter, r *http.Request) {
	id, err := runtime.ParseMessageID(r.PathValue("id"))
	if err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	var next runtime.MessageID
	switch action := r.PathValue("action"); action {
	case "requeue":
		next, err = h.svc.RequeueDeadLetter(r.Context(), id)
	case "fail":
		var req failRequest
		if err = decode(r, 64<<10, &req); err == nil {
			next, err = h.svc.FailDeadLetter(r.Context(), id, req.Reason)
		}
	default:
		writeJSON(w, http.StatusNotFound, apiError{Code: "not_found", Message: "no action " + strconv.Quote(action) + ": want requeue or fail"})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, takeResponse{Message: next.String()})
}

// DeadLetters implements Service.
func (c *Client) DeadLetters(ctx context.Context) ([]runtime.DeadLetter, error) {
	var out deadLetterList
	err := c.do(ctx, http.MethodGet, "/v1/deadletters", nil, &out)
	return out.DeadLetters, err
}

// RequeueDeadLetter implements Service.
func (c *Client) RequeueDeadLetter(ctx context.Context, id runtime.MessageID) (runtime.MessageID, error) {
	return c.take(ctx, id, "requeue", nil)
}

// FailDeadLetter implements Service.
func (c *Client) FailDeadLetter(ctx context.Context, id runtime.MessageID, reason string) (runtime.MessageID, error) {
	return c.take(ctx, id, "fail", failRequest{Reason: reason})
}

func (c *Client) take(ctx context.Context, id runtime.MessageID, action string, body any) (runtime.MessageID, error) {
	var out takeResponse
	if err := c.do(ctx, http.MethodPost, "/v1/deadletters/"+id.String()+"/"+action, body, &out); err != nil {
		return runtime.MessageID{}, err
	}
	return runtime.ParseMessageID(out.Message)
}
