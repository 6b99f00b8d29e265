package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Main parses args, runs the chosen command with rt, and returns the exit
// code. Usage errors exit 2 (docs/commands.md "Exit codes"), not kong's 80. Errors are printed
// once, as "guarded-exchange: <message>", on io.Err.
func Main(ctx context.Context, args []string, rt Runtime, io IO, version string) int {
	var root CLI
	exited := -1
	parser, err := kong.New(&root,
		kong.Name("guarded-exchange"),
		kong.Description("An MCP server that lets an AI agent trade on Bybit under limits it cannot change."),
		kong.Writers(io.Out, io.Err),
		kong.Exit(func(code int) { exited = code; panic(exitPanic{}) }),
		kong.Vars{"version": version},
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.BindTo(rt, (*Runtime)(nil)),
		kong.Bind(io),
		kong.Bind(versionVar(version)),
	)
	if err == nil {
		err = applyPolicyHelp(parser.Model)
	}
	if err != nil {
		fmt.Fprintf(io.Err, "guarded-exchange: %v\n", err)
		return ExitCannot
	}
	kctx, code, done := parse(parser, args, &exited)
	if done {
		return code
	}
	if c, ok := rt.(Configurer); ok {
		if err := c.Configure(kctx.Command(), &root.Globals, io); err != nil {
			fmt.Fprintf(io.Err, "guarded-exchange: %s\n", printableLines(err.Error()))
			return CodeOf(err)
		}
	}
	if err := kctx.Run(&root.Globals); err != nil {
		fmt.Fprintf(io.Err, "guarded-exchange: %s\n", printableLines(err.Error()))
		return CodeOf(err)
	}
	return ExitOK
}

type exitPanic struct{}

// parse runs kong's parser, turning its Exit calls (help) and parse errors
// into exit codes.
func parse(p *kong.Kong, args []string, exited *int) (kctx *kong.Context, code int, done bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitPanic); !ok {
				panic(r)
			}
			kctx, code, done = nil, *exited, true
			if code == exitKongMisc {
				code = ExitCannot
			}
		}
	}()
	kctx, err := p.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(p.Stderr, "guarded-exchange: %s\n", plainParseError(err.Error(), flagEnvs(p)))
			if pe.Context != nil {
				_ = pe.Context.PrintUsage(true)
			}
			return nil, ExitCannot, true
		}
		fmt.Fprintf(p.Stderr, "guarded-exchange: %v\n", err)
		return nil, ExitCannot, true
	}
	return kctx, 0, false
}

// kong's words for a flag given without its value: the next argument is
// a flag (or looks like one, as a negative number does), or there is none.
var (
	flagThenShort = regexp.MustCompile(`^(--[a-z0-9-]+): expected [a-z ]+ value but got "(-[^"]*)" \(short flag\); perhaps try .*$`)
	flagThenLong  = regexp.MustCompile(`^(--[a-z0-9-]+): expected [a-z ]+ value but got "(--[^"]*)" \(long flag\); perhaps try .*$`)
	flagThenEnd   = regexp.MustCompile(`^(--[a-z0-9-]+): (?:expected [a-z ]+ value but got "EOL" \(<EOL>\)|missing value, expecting .*)$`)
	// flagNotInEnum is kong's refusal of a value outside a flag's set,
	// which repeats the value.
	flagNotInEnum = regexp.MustCompile(`^(--[a-z0-9-]+) must be one of (.*) but got ".*"$`)
)

// flagEnvs maps each flag ("--venue") to the environment variables that
// set it (GX_VENUE).
func flagEnvs(p *kong.Kong) map[string][]string {
	out := map[string][]string{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if len(f.Envs) > 0 {
				out["--"+f.Name] = f.Envs
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	if p.Model != nil {
		walk(p.Model.Node)
	}
	return out
}

// plainParseError turns kong's message for a flag without its value into
// one that says what to write, and its message for a value outside a
// flag's set into one that names the flag and the variables that set it
// (envs) without repeating the value (it may have come from the
// environment); other messages are kept.
func plainParseError(msg string, envs map[string][]string) string {
	if m := flagNotInEnum.FindStringSubmatch(msg); m != nil {
		name := m[1]
		if e := envs[m[1]]; len(e) > 0 {
			name += " (" + strings.Join(e, ", ") + ")"
		}
		return fmt.Sprintf("%s must be one of %s", name, m[2])
	}
	if m := flagThenShort.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s needs a value, and %q is taken for a flag: write a value that starts with \"-\" after \"=\", as in %s=%s", m[1], m[2], m[1], m[2])
	}
	if m := flagThenLong.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s needs a value before %s: write %s=VALUE (see --help for the values it takes)", m[1], m[2], m[1])
	}
	if m := flagThenEnd.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s needs a value: write %s=VALUE (see --help for the values it takes)", m[1], m[1])
	}
	return msg
}

// printableLines is messages.Printable line by line: an error's message
// may carry the exchange's or the model's text to the human's terminal,
// and keeps its own line breaks.
func printableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = messages.Printable(l)
	}
	return strings.Join(lines, "\n")
}
