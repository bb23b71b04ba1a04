package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
	_ "github.com/mqb-project/mqb/bridge/all" // every built-in connector
)

// app is the state one run of the command shares between subcommands.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	env            *bridge.Env
	logger         *slog.Logger

	logLevel, logFormat string
	logs                *switchWriter
	secrets             secretList // credentials seen in endpoints, never printed
	signal              atomic.Int32
}

// Main runs the mqb command with args (without the program name) and
// returns the process exit code. SIGINT and SIGTERM stop a running route
// cleanly (exit 130 or 143); a second signal exits at once.
func Main(args []string) int {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, env: bridge.DefaultEnv}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go a.watchSignals(sigs, cancel, os.Exit)
	return a.run(ctx, args)
}

// signalEcho is how soon after the first signal a second one counts as
// the same request to stop: timeout(1) sends its SIGTERM to the process
// and then to its process group, so mqb often gets it twice at once.
const signalEcho = 250 * time.Millisecond

// watchSignals cancels the run at the first signal, and exits at once at a
// second one that comes later than signalEcho.
func (a *app) watchSignals(sigs <-chan os.Signal, cancel context.CancelCauseFunc, exit func(code int)) {
	var first time.Time
	for s := range sigs {
		n := int(s.(syscall.Signal))
		if a.signal.CompareAndSwap(0, int32(n)) {
			first = time.Now()
			cancel(fmt.Errorf("received %v", s))
			continue
		}
		if time.Since(first) < signalEcho {
			continue
		}
		a.fatal(fmt.Sprintf("second %v: exiting without settling", s), "exit_code", 128+n)
		exit(128 + n)
	}
}

func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		err = usage(commandSuggestion(root, err))
	}
	code := exitCode(err, int(a.signal.Load()))
	if a.signal.Load() != 0 && errors.Is(err, context.Canceled) && !errors.Is(err, bridge.ErrInterrupted) {
		// a command other than a route (spool stat on a large spool)
		err = fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	if err != nil {
		if a.logger == nil && logFormatArg(args) == "json" {
			a.logFormat = "json" // cobra stopped before it parsed the flag
		}
		a.fatal(oneLine(err, a.secrets.redact), "exit_code", code)
	}
	return code
}

// logFormatArg returns the value args give --log-format, for an error
// cobra found before it parsed the flags (an unknown command or flag).
func logFormatArg(args []string) string {
	format := ""
	for i, arg := range args {
		if arg == "--" {
			break
		}
		if v, ok := strings.CutPrefix(arg, "--log-format="); ok {
			format = v
		} else if arg == "--log-format" && i+1 < len(args) {
			format = args[i+1]
		}
	}
	return format
}

// fatal prints the message the command ends with: "mqb: msg" on standard
// error, or a JSON log record with --log-format json, so that everything
// on standard error is then JSON.
func (a *app) fatal(msg string, args ...any) {
	if a.logFormat != "json" {
		fmt.Fprintf(a.stderr, "mqb: %s\n", msg)
		return
	}
	log := a.logger
	if log == nil { // the command failed before logging was set up
		log = slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{ReplaceAttr: durationText}))
	}
	log.Error(msg, args...)
}

// durationText prints durations as Go writes them ("200ms"), not as
// nanoseconds, in every log format.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "mqb",
		Short: "Move messages through directory spools and between endpoints",
		Long: `mqb moves messages between endpoints named by URL, such as a directory
spool (dir-spool:///var/spool/orders), a file (file:///data/orders.jsonl?format=json),
a drop-zone directory (dropzone:///data/incoming), stdin:// and stdout://.

Data goes to standard output; logs, progress and errors to standard error.
Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error,
130 or 143 interrupted by SIGINT or SIGTERM. The route then settles what it
holds before it exits; a second signal, sent more than 250ms after the
first, exits at once.

URL schemes: ` + strings.Join(a.env.Schemes(), ", ") + `.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setupLogging()
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usage(flagSuggestion(cmd, err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&a.logFormat, "log-format", "text", "log format on standard error: text or json (then every line is a JSON object, the final error included)")
	root.AddCommand(a.copyCommand(), a.runCommand(), a.lintCommand(), a.spoolCommand(), a.conformanceCommand(), a.benchCommand(), a.versionCommand(), a.completionCommand(root), a.bashCompleteCommand(), a.connectorsCommand(), a.fieldsCommand())
	showAllDefaults(root)
	return root
}

func (a *app) setupLogging() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return usage(fmt.Errorf("--log-level %q: valid levels are debug, info, warn, error", a.logLevel))
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationText}
	a.logs = &switchWriter{base: a.stderr}
	var h slog.Handler
	switch a.logFormat {
	case "text":
		h = slog.NewTextHandler(a.logs, opts)
	case "json":
		h = slog.NewJSONHandler(a.logs, opts)
	default:
		return usage(fmt.Errorf("--log-format %q: valid formats are text, json", a.logFormat))
	}
	a.logger = slog.New(&redactHandler{inner: h, redact: a.secrets.redact})
	a.env.Logger = a.logger
	return nil
}

// exactArgs is cobra.ExactArgs with a usage error naming what is expected.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usage(fmt.Errorf("%s expects %s (got %d argument(s)); see %s --help", cmd.CommandPath(), what, len(args), cmd.CommandPath()))
		}
		return nil
	}
}

// noArgs refuses stray arguments, which are usually a shell quoting slip.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		hint := ""
		if strings.Contains(strings.Join(args, " "), "=") {
			hint = " (quote URLs that contain & or ?)"
		}
		return usage(fmt.Errorf("%s takes no arguments, got %q%s", cmd.CommandPath(), args, hint))
	}
	return nil
}

var errNoRoute = errors.New("no route: give --from and --to, or --config ROUTE.yaml")
