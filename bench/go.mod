module github.com/mqb-project/mqb/bench

go 1.26.0

require (
	github.com/mqb-project/mqb/backend-memfs v0.0.0
	github.com/mqb-project/mqb/backend-os v0.0.0
	github.com/mqb-project/mqb/core v0.0.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/spf13/afero v1.15.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

replace (
	github.com/mqb-project/mqb/backend-memfs => ../backend-memfs
	github.com/mqb-project/mqb/backend-os => ../backend-os
	github.com/mqb-project/mqb/conformance => ../conformance
	github.com/mqb-project/mqb/core => ../core
)
