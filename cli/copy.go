package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/core/option"
)

type copyFlags struct {
	from, to    string
	drain       bool
	batchSize   int
	batchPeriod time.Duration
	batchBytes  string
	config      string
	deadLetter  string
	maxDeliver  int
	jq          []string
	run         runFlags
}

func (a *app) copyCommand() *cobra.Command {
	var f copyFlags
	cmd := &cobra.Command{
		Use:   "copy --from URL --to URL",
		Short: "Move messages from one endpoint to another",
		Long: `copy reads messages from --from and writes them to --to, acknowledging each
batch at the source only once the target has made it durable.

With --drain the route ends as soon as the source has nothing left (a file
ends at its end anyway). With --config the route comes from a route file,
and the flags given override it.`,
		Example: `  mqb copy --drain --from 'file:///data/orders.jsonl?format=json' --to 'dir-spool:///var/spool/orders?emit_done=success'
  mqb copy --drain --from 'dir-spool:///var/spool/orders?stop_on_done=true' --to 'file:///data/out.jsonl?format=json'
  mqb copy --from stdin:// --to 'dir-spool:///var/spool/telemetry?naming_pattern={seq:012}&shard_depth=2&shard_width=3'
  mqb copy --drain --jq '.items[] | select(.qty > 0)' --from 'file:///data/batches.jsonl?format=json' --to stdout://`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.copyConfig(cmd, &f)
			if err != nil {
				return err
			}
			route, err := a.env.NewRoute(cfg)
			if err != nil {
				return err
			}
			return a.runRoute(cmd.Context(), "copy", "copy", cfg, route, &f.run)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "source endpoint URL, e.g. 'dir-spool:///var/spool/orders'")
	fl.StringVar(&f.to, "to", "", "target endpoint URL, e.g. 'file:///data/out.jsonl?format=json'")
	fl.BoolVar(&f.drain, "drain", false, "end once the source has nothing left instead of waiting for more")
	fl.IntVar(&f.batchSize, "batch-size", bridge.DefaultBatchSize, "most messages per batch")
	fl.DurationVar(&f.batchPeriod, "batch-period", 0, "how long a batch that is not full waits for more messages (0: no wait)")
	fl.StringVar(&f.batchBytes, "batch-max-bytes", "32MiB", "most payload bytes one write holds in memory, for an output or processor that needs payloads as bytes: a larger batch is written in parts, and acknowledged once all are durable")
	fl.StringArrayVar(&f.jq, "jq", nil, "reshape each JSON message with a jq program, after the route file's processors: each value it yields becomes a message, none drops it (repeatable), e.g. '.items[]'")
	fl.StringVar(&f.config, "config", "", "route file (YAML) to start from; - reads it from standard input")
	fl.StringVar(&f.deadLetter, "dead-letter", "", "endpoint URL that receives the messages --to refuses, with the error in their metadata; without it a refusal stops the route")
	fl.IntVar(&f.maxDeliver, "max-deliveries", 1, "how many times a refused message is tried before it goes to --dead-letter")
	f.run.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("from", a.completeEndpoint)
	_ = cmd.RegisterFlagCompletionFunc("to", a.completeEndpoint)
	return cmd
}

// copyConfig builds the route from --config and the flags, flags winning.
func (a *app) copyConfig(cmd *cobra.Command, f *copyFlags) (*bridge.Config, error) {
	a.rememberSecrets(bridge.Endpoint{URL: f.from}, bridge.Endpoint{URL: f.to}, bridge.Endpoint{URL: f.deadLetter})
	cfg := &bridge.Config{}
	if f.config != "" {
		c, err := a.readConfig(f.config, f.run.sets)
		if err != nil {
			return nil, err
		}
		a.rememberSecrets(c.Input, c.Output)
		cfg = c
	} else if len(f.run.sets) > 0 {
		return nil, usage(errors.New("--set overrides a key of the route file: it needs --config"))
	}
	fl := cmd.Flags()
	if f.from != "" {
		cfg.Input = bridge.Endpoint{URL: f.from, Origin: "--from"}
	}
	if f.to != "" {
		cfg.Output = bridge.Endpoint{URL: f.to, Origin: "--to"}
	}
	if cfg.Input.URL == "" && cfg.Input.Connector == "" || cfg.Output.URL == "" && cfg.Output.Connector == "" {
		return nil, usage(errNoRoute)
	}
	for _, prog := range f.jq {
		j, err := bridge.NewJQ(prog)
		if err != nil {
			return nil, usage(fmt.Errorf("--jq: %w", err))
		}
		cfg.Pipeline.Processors = append(cfg.Pipeline.Processors, bridge.ProcessorConfig{Processor: j})
	}
	if fl.Changed("drain") {
		cfg.Drain = f.drain
	}
	if err := deadLetterFlags(cfg, f, fl.Changed("max-deliveries")); err != nil {
		return nil, err
	}
	if err := batchFlags(cfg, f, fl); err != nil {
		return nil, err
	}
	return cfg, nil
}

// batchFlags applies --batch-size, --batch-period and --batch-max-bytes to
// cfg: each one given, and --batch-size's default without a route file.
func batchFlags(cfg *bridge.Config, f *copyFlags, fl *pflag.FlagSet) error {
	if fl.Changed("batch-size") || f.config == "" {
		if f.batchSize < 1 {
			return usage(fmt.Errorf("--batch-size must be 1 or more (got %d)", f.batchSize))
		}
		cfg.Batch.Size = f.batchSize
	}
	if fl.Changed("batch-period") {
		if f.batchPeriod < 0 {
			return usage(fmt.Errorf("--batch-period must not be negative (got %v)", f.batchPeriod))
		}
		cfg.Batch.Period = bridge.Duration(f.batchPeriod)
	}
	if fl.Changed("batch-max-bytes") {
		n, err := option.ParseSize(f.batchBytes)
		if err == nil && n < 1 {
			err = fmt.Errorf("must be 1 or more (got %d)", n)
		}
		if err != nil {
			return usage(fmt.Errorf("--batch-max-bytes: %w", err))
		}
		cfg.Batch.MaxBytes = bridge.ByteSize(n)
	}
	return nil
}

// deadLetterFlags applies --dead-letter and --max-deliveries to cfg.
func deadLetterFlags(cfg *bridge.Config, f *copyFlags, maxChanged bool) error {
	if f.deadLetter != "" {
		cfg.DeadLetter = &bridge.Endpoint{URL: f.deadLetter, Origin: "--dead-letter"}
	}
	if maxChanged || f.config == "" {
		if f.maxDeliver < 1 {
			return usage(fmt.Errorf("--max-deliveries must be 1 or more (got %d)", f.maxDeliver))
		}
		cfg.MaxDeliveries = f.maxDeliver
	}
	return nil
}
