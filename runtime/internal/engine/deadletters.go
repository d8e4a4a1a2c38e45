package engine

import (
	"context"

	"github.com/flowgen-dev/flowgen/runtime/internal/maintenance"
	"github.com/flowgen-dev/flowgen/runtime/runtype"
)

// DeadLetters lists the dead letters of the engine's store.
func (e *Engine) DeadLetters(ctx context.Context) ([]runtype.DeadLetter, error) {
	return maintenance.DeadLetters(ctx, e.store)
}

// TakeDeadLetter is TakeDeadLetter on the engine's store.
func (e *Engine) TakeDeadLetter(ctx context.Context, id runtype.MessageID, action runtype.DeadLetterAction, reason string) (runtype.MessageID, error) {
	next, err := maintenance.TakeDeadLetter(ctx, e.store, id, action, reason)
	if err != nil {
		return next, err
	}
	return next, e.hook.crash(runtype.CrashRevived)
}
