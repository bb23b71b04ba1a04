module github.com/mqb-project/mqb/backend-os

go 1.26.0

require (
	github.com/mqb-project/mqb/conformance v0.0.0
	github.com/mqb-project/mqb/core v0.0.0
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.50.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace (
	github.com/mqb-project/mqb/conformance => ../conformance
	github.com/mqb-project/mqb/core => ../core
)
