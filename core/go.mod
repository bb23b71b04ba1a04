module github.com/mqb-project/mqb/core

go 1.26
