package bridge_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mqb-project/mqb/bridge"
	_ "github.com/mqb-project/mqb/bridge/all"
)

// A route from YAML: copy a JSON Lines file into a spool and mark it
// complete, then drain the spool to standard output.
func Example() {
	dir, err := os.MkdirTemp("", "mqb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	orders := filepath.Join(dir, "orders.jsonl")
	if err := os.WriteFile(orders, []byte(`{"order":1,"sku":"A-100"}`+"\n"+`{"order":2,"sku":"B-200"}`+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	bridge.DefaultEnv.Logger = slog.New(slog.DiscardHandler)

	in, err := bridge.FromConfig(strings.NewReader(fmt.Sprintf(`
input:
  file: {path: %q, format: json}
output:
  url: "dir-spool://%s/spool?emit_done=success"
drain: true
`, orders, dir)))
	if err != nil {
		log.Fatal(err)
	}
	if err := in.Run(context.Background()); err != nil {
		log.Fatal(err)
	}

	out, err := bridge.FromConfig(strings.NewReader(fmt.Sprintf(`
input:
  dir_spool: {path: %q, stop_on_done: true}
output:
  stdout: {format: json}
`, filepath.Join(dir, "spool"))))
	if err != nil {
		log.Fatal(err)
	}
	if err := out.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"order":1,"sku":"A-100"}
	// {"order":2,"sku":"B-200"}
}
