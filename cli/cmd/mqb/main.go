// Command mqb moves messages through directory spools and between other
// endpoints. See "mqb --help".
package main

import (
	"os"

	"github.com/mqb-project/mqb/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
