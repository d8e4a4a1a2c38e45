// Package slackpost is the notify.slack_post connector: it posts an order status message to Slack through an incoming webhook.
//
// connector.yaml is the source of truth; node_gen.go, types_gen.go and
// fixtures_gen_test.go are generated from it, and connector.go holds the
// hand-written Run.
package slackpost

//go:generate go tool flowgen gen
