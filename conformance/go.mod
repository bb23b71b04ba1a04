module github.com/mqb-project/mqb/conformance

go 1.26.0

require github.com/mqb-project/mqb/core v0.0.0

replace github.com/mqb-project/mqb/core => ../core
