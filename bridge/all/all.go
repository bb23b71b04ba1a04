// Package all registers every built-in connector in bridge.DefaultEnv.
// Import it for its side effect:
//
//	import _ "github.com/mqb-project/mqb/bridge/all"
package all

import (
	// Each package registers its connectors from its init function.
	_ "github.com/mqb-project/mqb/bridge/connectors/dirspool"
	_ "github.com/mqb-project/mqb/bridge/connectors/dropzone"
	_ "github.com/mqb-project/mqb/bridge/connectors/file"
	_ "github.com/mqb-project/mqb/bridge/connectors/mqtt"
	_ "github.com/mqb-project/mqb/bridge/connectors/nats"
	_ "github.com/mqb-project/mqb/bridge/connectors/postgres"
	_ "github.com/mqb-project/mqb/bridge/connectors/stdio"
)
