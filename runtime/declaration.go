package runtime

// Declaration is a connector's NodeInfo as plain data: what its spec
// declares, with the data-class table in place of the functions that read
// it. A host that runs a connector from its spec rather than from its
// generated package (a confined module) gets one from the spec (gen.Declare),
// sends it where it must (the certification harness), or writes it into
// generated flow code; NodeInfo turns it back into what the generated
// Info() returns.
type Declaration struct {
	ID           string      `json:"id"`
	Version      string      `json:"version"`
	Effects      Effects     `json:"effects"`
	Determinism  Determinism `json:"determinism"`
	RetryOwner   RetryOwner  `json:"retry_owner"`
	Retry        RetryPolicy `json:"retry"`
	KeySchema    string      `json:"key_schema"`
	KeyScope     IdemScope   `json:"key_scope"`
	KeyFields    []string    `json:"key_fields,omitempty"`
	Capabilities []string    `json:"capabilities,omitempty"`
	Egress       []string    `json:"egress,omitempty"`
	Secrets      []string    `json:"secrets,omitempty"`
	// SecretHosts are, per handle, the egress entries its value may be
	// sent to.
	SecretHosts map[string][]string `json:"secret_hosts,omitempty"`
	RateLimit   RateLimit           `json:"rate_limit"`
	Cache       Cache               `json:"cache"`
	// Classes is the data-class table: path ("params.x", "<in port>.a.b",
	// "<out port>.items[]") to class, as the generated DataClass reads it.
	Classes map[string]string `json:"classes,omitempty"`
	// InPort and OutPort are the names the input's and output's paths
	// start with.
	InPort  string `json:"in_port"`
	OutPort string `json:"out_port"`
}

// NodeInfo is the declaration as the runtime reads it: DataClass and
// Redact look up Classes, as a generated package's do.
func (d Declaration) NodeInfo() NodeInfo {
	table := func(path string) string { return d.Classes[path] }
	prefix := func(part string) (string, bool) {
		switch part {
		case "params":
			return "params", true
		case "input":
			return d.InPort, true
		case "output":
			return d.OutPort, true
		}
		return "", false
	}
	return NodeInfo{
		ID: d.ID, Version: d.Version, Effects: d.Effects, Determinism: d.Determinism,
		RetryOwner: d.RetryOwner, Retry: d.Retry, KeySchema: d.KeySchema, KeyScope: d.KeyScope, KeyFields: d.KeyFields,
		Capabilities: d.Capabilities, Egress: d.Egress, Secrets: d.Secrets, SecretHosts: d.SecretHosts, RateLimit: d.RateLimit, Cache: d.Cache,
		DataClass: func(part, path string) string {
			if p, ok := prefix(part); ok {
				return ClassAt(table, p, path)
			}
			return ""
		},
		Redact: func(part string, err error) error {
			if p, ok := prefix(part); ok {
				return Redact(err, p, table)
			}
			return err
		},
	}
}
