module github.com/flowgen-dev/flowgen

go 1.26.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/dave/jennifer v1.7.1
	github.com/fxamacker/cbor/v2 v2.10.0
	github.com/goccy/go-yaml v1.19.2
	github.com/google/uuid v1.6.0
	github.com/lib/pq v1.12.3
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	go.etcd.io/bbolt v1.4.3
	golang.org/x/text v0.43.0
	lukechampine.com/blake3 v1.4.1
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

tool (
	github.com/flowgen-dev/flowgen/cmd/flowgen
	honnef.co/go/tools/cmd/staticcheck
)
