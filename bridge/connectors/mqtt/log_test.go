package mqtt

import (
	"log"
	"log/slog"
	"os"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// init turns on Paho's own logs (and debug slog) when PAHO_DEBUG is set:
// 1 for errors and warnings, 2 for everything.
func init() {
	if os.Getenv("PAHO_DEBUG") != "" {
		paho.ERROR = log.New(os.Stderr, "[ERROR] ", 0)
		paho.WARN = log.New(os.Stderr, "[WARN] ", 0)
		paho.CRITICAL = log.New(os.Stderr, "[CRIT] ", 0)
		if os.Getenv("PAHO_DEBUG") == "2" {
			paho.DEBUG = log.New(os.Stderr, "[DEBUG] ", 0)
		}
		slog.SetLogLoggerLevel(slog.LevelDebug)
	}
}
