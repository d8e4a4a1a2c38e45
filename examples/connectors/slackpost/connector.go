package slackpost

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/flowgen-dev/flowgen/runtime"
)

// Connector posts to Slack. It holds no state of its own: what it
// remembers is in the dedupe store and KV.
type Connector struct{}

// Run posts "Order <id> is paid" to the channel, at most once per
// idempotency key:
//
//   - posted/<key> in KV means the message went out: report success;
//   - otherwise claim claim/<key>/<n> in the dedupe store, where n counts
//     the earlier attempts that failed with an answer from Slack (so the
//     post did not happen); only the claimant posts;
//   - a delivery that loses the claim finds the message posted, or fails
//     as Transient so that the broker delivers it again once the claimant
//     is done.
//
// A post answered with an error frees the message for the next attempt
// (n+1). A timeout does not: Slack may have posted, so the message stays
// claimed and later attempts fail rather than post twice.
func (Connector) Run(ctx Context, params Params, in Input) (Output, error) {
	key := ctx.IdempotencyKey()
	if _, posted, err := ctx.KVGet("posted/" + key); err != nil || posted {
		return Output{Ok: posted}, err
	}
	failures, err := counter(ctx, "failures/"+key)
	if err != nil {
		return Output{}, err
	}
	claimed, err := ctx.PutIfAbsent("claim/"+key+"/"+strconv.Itoa(failures), IdempotencyTTL)
	if err != nil {
		return Output{}, err
	}
	if !claimed {
		if _, posted, err := ctx.KVGet("posted/" + key); err != nil || posted {
			return Output{Ok: posted}, err
		}
		return Output{}, runtime.Errorf(runtime.Transient, "another delivery of this message holds its claim; not posting twice")
	}
	webhook, err := ctx.Secret(SecretSlackOrdersWebhook)
	if err != nil {
		return Output{}, err
	}
	body, err := json.Marshal(map[string]string{"channel": *params.Channel, "text": "Order " + in.OrderID + " is paid"})
	if err != nil {
		return Output{}, err
	}
	if _, err := ctx.Do(http.MethodPost, webhook, http.Header{"Content-Type": {"application/json"}}, body); err != nil {
		if answered(err) {
			if perr := ctx.KVPut("failures/"+key, []byte(strconv.Itoa(failures+1))); perr != nil {
				return Output{}, perr
			}
		}
		return Output{}, err
	}
	if err := ctx.KVPut("posted/"+key, []byte("1")); err != nil {
		return Output{}, err
	}
	return Output{Ok: true}, nil
}

// counter reads a decimal counter from KV; absent is 0.
func counter(ctx Context, key string) (int, error) {
	v, ok, err := ctx.KVGet(key)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, runtime.Errorf(runtime.Permanent, "KV %s holds %q, not a counter", key, v)
	}
	return n, nil
}

// answered reports whether Slack answered the post with an error status,
// so it did not post; after a timeout or a lost connection that is unknown.
func answered(err error) bool {
	var re *runtime.Error
	return errors.As(err, &re) && re.Status != 0
}
