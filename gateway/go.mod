module github.com/zimmerhq/zimmer/gateway

go 1.26.0

require (
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/sethvargo/go-envconfig v1.4.3 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.25.0
	golang.org/x/sys v0.49.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261026165753-2ffab32bce7e // indirect
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.33.0
	github.com/mark3labs/mcp-go v1.2.1
	github.com/stretchr/testify v1.12.1
	github.com/zimmerhq/zimmer/proto/gen v0.0.0
	github.com/zimmerhq/zimmer/services/lifecycle v0.0.0
	github.com/zimmerhq/zimmer/services/platform v0.0.0
	golang.org/x/sync v0.25.0
	golang.org/x/text v0.43.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

replace (
	github.com/zimmerhq/zimmer/proto/gen => ../proto/gen
	github.com/zimmerhq/zimmer/services/lifecycle => ../services/lifecycle
	github.com/zimmerhq/zimmer/services/platform => ../services/platform
)
