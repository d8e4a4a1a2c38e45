module github.com/flowgen-dev/flowgen

go 1.26.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/goccy/go-yaml v1.19.2
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
)

require golang.org/x/text v0.14.0 // indirect
