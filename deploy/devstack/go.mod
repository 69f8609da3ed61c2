module github.com/zimmerhq/zimmer/deploy/devstack

go 1.26.0

require (
	github.com/VictoriaMetrics/metricsql v0.87.3
	github.com/jackc/pgx/v5 v5.12.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sync v0.25.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/VictoriaMetrics/metrics v1.35.3 // indirect
	github.com/valyala/fastrand v1.1.0 // indirect
	github.com/valyala/histogram v1.2.0 // indirect
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/crypto v0.58.0
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
