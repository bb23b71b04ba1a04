module github.com/mqb-project/mqb/cli

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/jackc/pgx/v5 v5.12.0
	github.com/mqb-project/mqb/core v0.0.0
	github.com/nats-io/nats.go v1.55.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/spf13/afero v1.15.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mqb-project/mqb/backend-memfs v0.0.0 // indirect
	github.com/mqb-project/mqb/backend-os v0.0.0
	github.com/mqb-project/mqb/bench v0.0.0
	github.com/mqb-project/mqb/bridge v0.0.0
	github.com/mqb-project/mqb/conformance v0.0.0
	github.com/prometheus/client_golang v1.25.0
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.9
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sys v0.50.0
)

replace github.com/mqb-project/mqb/core => ../core

replace github.com/mqb-project/mqb/bridge => ../bridge

replace github.com/mqb-project/mqb/backend-os => ../backend-os

replace github.com/mqb-project/mqb/backend-memfs => ../backend-memfs

replace github.com/mqb-project/mqb/bench => ../bench

replace github.com/mqb-project/mqb/conformance => ../conformance
