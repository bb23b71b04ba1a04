module github.com/mqb-project/mqb/bridge

go 1.26

require github.com/mqb-project/mqb/core v0.0.0

replace github.com/mqb-project/mqb/core => ../core
