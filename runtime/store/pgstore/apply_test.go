package pgstore

import "testing"

// TestSettleFoldsIntoItsUnsentPublication: a settle of a message published
// reserved earlier in the same unsent batch marks that publication
// acknowledged instead of queueing an operation; any other settle is
// queued as it is.
func TestSettleFoldsIntoItsUnsentPublication(t *testing.T) {
	reserved, ready := [16]byte{1}, [16]byte{2}
	var b batch
	b.add(op{kind: opEnqueue, t: "s", k: reserved[:], c: reservedOnce})
	b.add(op{kind: opEnqueue, t: "s", k: ready[:]})
	for _, other := range []struct {
		stream string
		id     [16]byte
		token  uint64
	}{
		{"s", ready, 1},    // published ready, not reserved
		{"s", reserved, 2}, // a later reservation
		{"t", reserved, 1}, // another stream
	} {
		if b.settleUnsent(other.stream, other.id, other.token) {
			t.Errorf("settle of %s %x token %d folded into a publication", other.stream, other.id[0], other.token)
		}
	}
	if !b.settleUnsent("s", reserved, 1) {
		t.Fatal("the settle of the reserved publication was not folded into it")
	}
	if len(b.op) != 2 || b.c[0] != acknowledgedOnce || b.c[1] != 0 {
		t.Errorf("batch after the fold: ops %v, c %v; want the same two, the first acknowledged", b.op, b.c)
	}
	if b.settleUnsent("s", reserved, 1) {
		t.Error("a second settle folded into the publication already acknowledged")
	}
}
