package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/core/option"
	"github.com/mqb-project/mqb/core/option/schemadoc"
)

// connectorInfo is one connector, as connectors --json prints it.
type connectorInfo struct {
	Name    string   `json:"name"`
	Schemes []string `json:"schemes"`
	Source  bool     `json:"source"`
	Target  bool     `json:"target"`
	Options []string `json:"options"`
}

func (a *app) connectorsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "connectors",
		Short: "List every connector: its URL schemes, whether it reads or writes, its options",
		Long: `connectors lists the connectors this mqb has: the YAML name, the URL schemes,
whether it can be a source (--from, input:) and a target (--to, output:),
and its options. mqb fields SCHEME prints the options in full.`,
		Example: `  mqb connectors
  mqb connectors --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []connectorInfo
			for _, name := range a.env.Names() {
				c, _ := a.env.Connector(name)
				list = append(list, connectorInfo{Name: c.Name, Schemes: c.Schemes,
					Source: c.NewSource != nil, Target: c.NewTarget != nil, Options: c.Schema.Names()})
			}
			if asJSON {
				return writeJSON(a.stdout, list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCHEMES\tSOURCE\tTARGET\tOPTIONS")
			for _, c := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, strings.Join(c.Schemes, ", "), yesNo(c.Source), yesNo(c.Target), strings.Join(c.Options, ", "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the connectors as a JSON array")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (a *app) fieldsCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fields SCHEME|NAME",
		Short: "List every option of a connector",
		Long: `fields prints every option of one connector, named by a URL scheme
(dir-spool, nats, mqtt...) or its YAML name (dir_spool): name, type, default
and allowed values, then what it does. The same name is a query parameter
of the URL and a key under the connector in a route file.`,
		Example: `  mqb fields nats
  mqb fields postgres --json`,
		Args:              exactArgs(1, "one connector: a URL scheme or a YAML name (see mqb connectors)"),
		ValidArgsFunction: a.completeConnectorNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.lookupConnector(strings.TrimSuffix(args[0], "://"))
			if err != nil {
				return err
			}
			page := schemadoc.Page{Schema: c.Schema}
			if c.Name == "dir_spool" {
				page.Allowed = dirspool.Allowed
			}
			return a.printFields(page, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the fields as a JSON array")
	return cmd
}

// printFields prints the fields of page's schema: aligned text, or a JSON
// array.
func (a *app) printFields(page schemadoc.Page, asJSON bool) error {
	if !asJSON {
		return schemadoc.WriteText(a.stdout, page, 80)
	}
	out := make([]fieldInfo, 0, len(page.Schema.Fields))
	for _, f := range page.Schema.Fields {
		out = append(out, fieldInfo{Name: f.Name, Type: string(f.Type), Default: f.Default, Required: f.Required,
			Allowed: page.AllowedText(f), Enum: f.Enum, Doc: f.Doc})
	}
	return writeJSON(a.stdout, out)
}

// lookupConnector finds a connector by YAML name or URL scheme.
func (a *app) lookupConnector(s string) (*bridge.Connector, error) {
	if c, ok := a.env.Connector(s); ok {
		return c, nil
	}
	if c, ok := a.env.ConnectorForScheme(strings.ToLower(s)); ok {
		return c, nil
	}
	valid := append(a.env.Names(), a.env.Schemes()...)
	sort.Strings(valid)
	msg := fmt.Sprintf("no connector %q (valid: %s)", s, strings.Join(a.env.Schemes(), ", "))
	if c := option.Closest(s, valid); c != "" {
		msg += fmt.Sprintf("; did you mean %q?", c)
	}
	return nil, usage(fmt.Errorf("%s", msg))
}

func (a *app) completeConnectorNames(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.env.Schemes(), cobra.ShellCompDirectiveNoFileComp
}

// completeEndpoint completes --from and --to: a scheme, then after ? or &
// an option name of that scheme's connector (described by the start of its
// documentation), then after = an option's allowed values.
func (a *app) completeEndpoint(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	all, dir := a.endpointCandidates(toComplete)
	var out []string
	for _, c := range all {
		if strings.HasPrefix(c, toComplete) {
			out = append(out, c)
		}
	}
	return out, dir
}

func (a *app) endpointCandidates(toComplete string) ([]string, cobra.ShellCompDirective) {
	scheme, rest, ok := strings.Cut(toComplete, "://")
	if !ok {
		var out []string
		for _, s := range a.env.Schemes() {
			out = append(out, s+"://")
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	c, found := a.env.ConnectorForScheme(strings.ToLower(scheme))
	i := strings.LastIndexAny(rest, "?&")
	if !found || i < 0 {
		return nil, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	prefix := toComplete[:len(toComplete)-len(rest)+i+1]
	word := rest[i+1:]
	var out []string
	if name, _, hasValue := strings.Cut(word, "="); hasValue {
		if f := fieldNamed(c.Schema, name); f != nil {
			vals := f.Enum
			if f.Type == option.TypeBool {
				vals = []string{"true", "false"}
			}
			for _, v := range vals {
				out = append(out, prefix+name+"="+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	for _, n := range c.Schema.Names() {
		if n != "path" {
			out = append(out, prefix+n+"=\t"+firstSentence(fieldNamed(c.Schema, n).Doc))
		}
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// firstSentence is the start of an option's documentation, which the
// shells show beside its name.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i]
	}
	return strings.TrimSuffix(doc, ".")
}

func fieldNamed(s *option.Schema, name string) *option.Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}
