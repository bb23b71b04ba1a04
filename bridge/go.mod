module github.com/mqb-project/mqb/bridge

go 1.26.0

require (
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/itchyny/gojq v0.12.20
	github.com/mqb-project/mqb/core v0.0.0
	github.com/nats-io/nats.go v1.55.0
	golang.org/x/net v0.58.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0
	github.com/mqb-project/mqb/backend-memfs v0.0.0
	github.com/mqb-project/mqb/backend-os v0.0.0
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/mqb-project/mqb/core => ../core

replace github.com/mqb-project/mqb/backend-os => ../backend-os

replace github.com/mqb-project/mqb/backend-memfs => ../backend-memfs

replace github.com/mqb-project/mqb/conformance => ../conformance
