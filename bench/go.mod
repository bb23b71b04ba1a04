module github.com/mqb-project/mqb/bench

go 1.26.0

require (
	github.com/mqb-project/mqb/backend-memfs v0.0.0
	github.com/mqb-project/mqb/backend-os v0.0.0
	github.com/mqb-project/mqb/core v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/spf13/afero v1.15.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace (
	github.com/mqb-project/mqb/backend-memfs => ../backend-memfs
	github.com/mqb-project/mqb/backend-os => ../backend-os
	github.com/mqb-project/mqb/conformance => ../conformance
	github.com/mqb-project/mqb/core => ../core
)
