package runtype

// WorkStream is the stream every activation message travels on.
const WorkStream = "flowgen.work"

// Crash points, in protocol order. Steps 1 and 2 commit in one
// transaction, with the ack, and with step 3 when the message closes its
// job; the points after that commit fire in order all the same, so a crash
// test visits each.
const (
	CrashReserved = "reserved" // message reserved, nothing written
	CrashEntered  = "entered"  // entry counted, work not started
	CrashWorked   = "worked"   // node ran (effects happened), step 1 not committed
	CrashStep2    = "step2"    // steps 1 and 2 committed
	CrashStep3    = "step3"    // the job completed (the closing message only)
	CrashAcked    = "acked"    // message acknowledged
)

// Crash points after commits outside the step protocol, which CrashPoints
// leaves out: each commit of the retention sweeper, each commit of a
// schedule's ticks, and the commit that requeues or fails a dead letter.
const (
	CrashSwept     = "swept"
	CrashScheduled = "scheduled"
	CrashRevived   = "revived"
)

// CrashPoints lists every crash point in protocol order.
var CrashPoints = []string{CrashReserved, CrashEntered, CrashWorked, CrashStep2, CrashStep3, CrashAcked}
