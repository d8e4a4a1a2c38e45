package slackpost

import (
	"context"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime/fixturetest"
)

// FixtureEnv gives the fixtures the webhook URL they recorded: for an
// incoming webhook the secret is the URL itself.
func (*Connector) FixtureEnv(testing.TB) fixturetest.Env {
	return fixturetest.Env{Secrets: webhookSecret("https://hooks.slack.com/services/T000/B000/XXXX")}
}

type webhookSecret string

func (w webhookSecret) Secret(context.Context, string) (string, error) { return string(w), nil }
