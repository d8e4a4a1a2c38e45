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
	// capability or secret, a read that asked to be a write, a host
	// outside the egress allowlist, a message over the size limit).
	EventCapability EventKind = "capability"
	// EventOutput: the module wrote more to its standard streams in one
	// activation than the host takes; the rest was dropped.
	EventOutput EventKind = "output"
	// EventSuppressed: how many further events an activation had after
	// the first maxEvents.
	EventSuppressed EventKind = "suppressed"
)

// maxEvents is how many events one activation (or one initialization)
// reports one by one; the rest are counted and reported together when it
// ends, so that a module refused a million times costs the log one line.
const maxEvents = 16

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

// report tells Options.Report about an event of inst, or counts it once
// maxEvents were reported in the same activation.
func (h *Host) report(inst *instance, kind EventKind, detail string) {
	if inst.events++; inst.events > maxEvents {
		return
	}
	h.deliver(inst, kind, detail)
}

// reportSuppressed reports how many events report held back since the
// last call, and starts counting again.
func (h *Host) reportSuppressed(inst *instance) {
	if n := inst.events - maxEvents; n > 0 {
		h.deliver(inst, EventSuppressed, fmt.Sprintf("%d more events not reported one by one", n))
	}
	inst.events = 0
}

func (h *Host) deliver(inst *instance, kind EventKind, detail string) {
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
