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
		PolicyVars(),
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.BindTo(rt, (*Runtime)(nil)),
		kong.Bind(io),
		kong.Bind(versionVar(version)),
	)
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
			fmt.Fprintf(p.Stderr, "guarded-exchange: %s\n", plainParseError(err.Error()))
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
)

// plainParseError turns kong's message for a flag without its value into
// one that says what to write; other messages are kept.
func plainParseError(msg string) string {
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
