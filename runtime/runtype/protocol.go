package runtype

// WorkStream is the stream every activation message travels on.
const WorkStream = "flowgen.work"

// Crash points, in protocol order. Steps 1 and 2 commit in one
// transaction, so there is no point between them.
const (
	CrashReserved = "reserved" // message reserved, nothing written
	CrashEntered  = "entered"  // entry counted, work not started
	CrashWorked   = "worked"   // node ran (effects happened), step 1 not committed
	CrashStep2    = "step2"    // step 2 committed
	CrashStep3    = "step3"    // step 3 committed, message not acknowledged
	CrashAcked    = "acked"    // message acknowledged
)

// CrashPoints lists every crash point in protocol order.
var CrashPoints = []string{CrashReserved, CrashEntered, CrashWorked, CrashStep2, CrashStep3, CrashAcked}
