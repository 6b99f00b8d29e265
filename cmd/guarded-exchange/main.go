// Command guarded-exchange is an MCP server that lets an AI agent trade on
// Bybit under limits the agent cannot change. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cmd/internal/app"
)

// version is set with -ldflags "-X main.version=..."; otherwise it comes
// from the build info.
var version = ""

func main() {
	app.HoldGCForStartup()
	// stdout belongs to the MCP stream: keep the real one for the commands
	// that print, and send any stray print to stderr.
	stdout := os.Stdout
	os.Stdout = os.Stderr

	if f := app.EnvFileFromArgs(os.Args[1:], os.Getenv); f != "" {
		if err := app.LoadEnvFile(f); err != nil {
			fmt.Fprintf(os.Stderr, "guarded-exchange: cannot start: %v\n", err)
			os.Exit(cli.ExitCannot)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt := &app.Runtime{
		Release: buildVersion(),
		// Configure builds the logger once the flags are parsed.
		LogOutput: os.Stderr,
		Stdin:     os.Stdin,
		Stdout:    stdout,
	}
	code := cli.Main(ctx, os.Args[1:], rt, cli.IO{Out: stdout, Err: os.Stderr, In: os.Stdin}, rt.Release)
	stop()
	os.Exit(code)
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
