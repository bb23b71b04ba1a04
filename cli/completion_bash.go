package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// bashScript is what "mqb completion bash" prints. Cobra's own bash script
// compares the shell-escaped word at the cursor with unescaped candidates
// and trims them at COMP_WORDBREAKS (: and =), which garbles endpoint URLs
// (dir-spool:///s?fsync=...); it also needs the bash-completion package.
// This script hands the line to "mqb __complete-bash", which splits it as
// the shell does and returns replacements for exactly the text readline
// replaces, already quoted for the shell.
const bashScript = `# bash completion for mqb; needs no other package.
__mqb_complete() {
    local out directive line
    out=$("${1/#\~/$HOME}" __complete-bash "${COMP_TYPE:-9}" "${COLUMNS:-80}" "$2" "${COMP_LINE:0:COMP_POINT}" 2>/dev/null) || return 0
    directive=${out%%$'\n'*}
    COMPREPLY=()
    if [[ $out == *$'\n'* ]]; then
        while IFS= read -r line; do COMPREPLY+=("$line"); done <<<"${out#*$'\n'}"
    fi
    if [[ $(type -t compopt) == builtin ]]; then
        if (( directive & 2 )); then compopt -o nospace; fi
        if (( directive & 4 )); then compopt +o default; fi
    fi
}
if [[ $(type -t compopt) == builtin ]]; then
    complete -o default -F __mqb_complete mqb
else
    complete -o default -o nospace -F __mqb_complete mqb
fi
`

// bashCompleteCommand is the hidden helper of bashScript. Its arguments
// are bash's COMP_TYPE, the terminal width, the text readline replaces
// and the command line up to the cursor. It prints cobra's directive on
// the first line, then one replacement per line.
func (a *app) bashCompleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:                "__complete-bash COMP_TYPE COLUMNS WORD LINE",
		Hidden:             true,
		DisableFlagParsing: true, // the line holds flags of other commands
		Args:               cobra.ExactArgs(4),
		RunE: func(cmd *cobra.Command, args []string) error {
			words, raw := splitShellLine(args[3])
			if len(words) == 0 {
				return nil
			}
			cands, directive := a.cobraCandidates(words[1:])
			replies := bashReplies(words[len(words)-1], raw, args[2], cands)
			if args[0] == "63" { // a list of choices, nothing inserted
				replies = listedReplies(replies)
			}
			columns, _ := strconv.Atoi(args[1])
			if len(replies) == 1 || args[0] == "37" || args[0] == "42" { // inserted as is: one choice, menu-complete, insert-all
				columns = 0
			}
			fmt.Fprintln(cmd.OutOrStdout(), directive)
			for _, r := range withDescriptions(replies, columns) {
				fmt.Fprintln(cmd.OutOrStdout(), r.text+r.desc)
			}
			return nil
		},
	}
}

// candidate is one completion from cobra: the text and its description.
type candidate struct{ text, desc string }

// cobraCandidates asks cobra's own completion ("__complete") of a fresh
// command tree what may follow args, the last of which is the word at the
// cursor.
func (a *app) cobraCandidates(args []string) ([]candidate, int) {
	var out bytes.Buffer
	b := &app{stdin: os.Stdin, stdout: &out, stderr: io.Discard, env: a.env}
	root := b.rootCommand()
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	root.SetOut(&out)
	root.SetErr(io.Discard)
	if root.Execute() != nil {
		return nil, int(cobra.ShellCompDirectiveError)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	directive, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		return nil, int(cobra.ShellCompDirectiveError)
	}
	var cands []candidate
	for _, l := range lines[:len(lines)-1] {
		if l == "" || strings.HasPrefix(l, "_activeHelp_ ") {
			continue
		}
		text, desc, _ := strings.Cut(l, "\t")
		cands = append(cands, candidate{text, desc})
	}
	return cands, directive
}

// bashReplies turns candidates for the word at the cursor (its shell
// value word, its raw text raw) into what replaces the part of it bash
// hands the completion function (rlWord: raw's tail after the last
// COMP_WORDBREAKS character or open quote), quoted as the shell needs
// at that point. A candidate for "--flag=value" completes the value
// only, as cobra does.
func bashReplies(word, raw, rlWord string, cands []candidate) []candidate {
	if !strings.HasSuffix(raw, rlWord) {
		return nil
	}
	head := ""
	if i := strings.Index(word, "="); strings.HasPrefix(word, "-") && i > 0 {
		head = word[:i+1]
	}
	before, quote := dequote(raw[:len(raw)-len(rlWord)])
	var out []candidate
	for _, c := range cands {
		full := head + c.text
		if !strings.HasPrefix(full, word) || !strings.HasPrefix(full, before) {
			continue
		}
		out = append(out, candidate{text: shellQuote(full[len(before):], quote), desc: c.desc})
	}
	return out
}

// withDescriptions appends each reply's description, aligned and cut to
// the terminal width (none when columns leaves no room), for bash's list
// of choices. Several replies keep their common prefix, which is what
// bash inserts.
func withDescriptions(replies []candidate, columns int) []candidate {
	longest := 0
	for _, r := range replies {
		longest = max(longest, len(r.text))
	}
	out := make([]candidate, len(replies))
	for i, r := range replies {
		out[i].text = r.text
		room := columns - longest - 4
		if r.desc == "" || room < 8 {
			continue
		}
		if d := []rune(r.desc); len(d) > room {
			r.desc = string(d[:room-1]) + "…"
		}
		out[i].desc = strings.Repeat(" ", longest-len(r.text)) + "  (" + r.desc + ")"
	}
	return out
}

// listedReplies shortens replies that bash only lists (the second TAB) to
// what differs after the last ? or & they share, so that a list of a
// URL's options shows "fsync=", not the whole URL before it.
func listedReplies(replies []candidate) []candidate {
	if len(replies) < 2 {
		return replies
	}
	common := replies[0].text
	for _, r := range replies[1:] {
		n := 0
		for n < len(common) && n < len(r.text) && common[n] == r.text[n] {
			n++
		}
		common = common[:n]
	}
	cut := strings.LastIndexAny(common, "?&") + 1
	out := make([]candidate, len(replies))
	for i, r := range replies {
		out[i] = candidate{text: r.text[cut:], desc: r.desc}
	}
	return out
}
