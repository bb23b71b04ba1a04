module github.com/mqb-project/mqb/backend-memfs

go 1.26.0

require (
	github.com/mqb-project/mqb/conformance v0.0.0
	github.com/mqb-project/mqb/core v0.0.0
	github.com/spf13/afero v1.15.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace (
	github.com/mqb-project/mqb/conformance => ../conformance
	github.com/mqb-project/mqb/core => ../core
)
