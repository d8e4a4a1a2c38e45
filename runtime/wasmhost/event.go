package wasmhost

import "fmt"

// EventKind is what a module tried and was refused, or left behind.
type EventKind string

// The events.
const (
	// EventFile: the module opened, listed, changed or asked about a
	// file; it was refused.
	EventFile EventKind = "file"
	// EventExit: the module asked to exit the process (os.Exit); its
	// instance is closed and the activation fails.
	EventExit EventKind = "exit"
	// EventGoroutines: goroutines the activation started were still
	// running when Run returned; the instance is closed, so they never run
	// again.
	EventGoroutines EventKind = "goroutines"
	// EventCapability: a host function refused a call (an undeclared
	// capability, a read that asked to be a write, a message over the
	// size limit).
	EventCapability EventKind = "capability"
)

// Event is an attempt of a confined module to reach what it may not, as
// the host saw it. Nothing in it comes from the module but Detail's
// arguments (a path, a method), which are the module's own words.
type Event struct {
	// Connector is the connector's id.
	Connector string
	// InActivation is set when an activation was running; otherwise the
	// module was initializing (its packages' init functions).
	InActivation bool
	// Key is the running activation's idempotency key ("" for a
	// connector without key fields).
	Key    string
	Kind   EventKind
	Detail string
}

func (e Event) String() string {
	who := e.Connector + " (initialization)"
	switch {
	case e.Key != "":
		who = e.Connector + " (activation " + e.Key + ")"
	case e.InActivation:
		who = e.Connector + " (activation)"
	}
	return fmt.Sprintf("%s: %s: %s", who, e.Kind, e.Detail)
}

// report tells Options.Report about an event of inst.
func (h *Host) report(inst *instance, kind EventKind, detail string) {
	ev := Event{Connector: inst.m.info.ID, Kind: kind, Detail: detail}
	if inst.act != nil {
		ev.InActivation, ev.Key = true, inst.act.rc.IdempotencyKey()
	}
	if h.opts.Report != nil {
		h.opts.Report(ev)
		return
	}
	h.log.Warn("confined connector refused", "connector", ev.Connector, "activation", ev.InActivation, "key", ev.Key, "kind", string(ev.Kind), "detail", ev.Detail)
}
