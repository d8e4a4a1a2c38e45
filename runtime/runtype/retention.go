package runtype

// Swept reports what one Sweep deleted.
type Swept struct {
	// Jobs finished past their retention, deleted with all their state.
	Jobs int `json:"jobs"`
	// Records are dedupe records and cache entries past their TTL.
	Records int `json:"records"`
	// Blobs are stored inputs no job refers to any more.
	Blobs int `json:"blobs"`
	// Acked are acknowledged message ids forgotten.
	Acked int `json:"acked"`
	// Busy is set when another process was sweeping the store; this
	// sweep did nothing.
	Busy bool `json:"busy,omitempty"`
}
