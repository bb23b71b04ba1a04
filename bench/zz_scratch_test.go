package bench

import (
	"testing"

	"github.com/mqb-project/mqb/core"
)

func BenchmarkZZBatchProduce(b *testing.B) {
	aloneProduce(b, "sharded", core.FsyncBatch, 256)
}
