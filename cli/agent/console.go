package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli/agent/llm"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// EnvToken holds the bearer token for --mcp-url.
const EnvToken = "GX_TOKEN"

// Options configure the console agent.
type Options struct {
	Provider string
	Model    string
	BaseURL  string
	// MCPURL is a server's Streamable HTTP endpoint; "" starts `serve`
	// over stdio with ServeArgs.
	MCPURL string
	// ServeArgs are the global flags handed to `serve` (the same home,
	// user and venue).
	ServeArgs []string
	// Prompt, when set, runs one turn and exits.
	Prompt    string
	MaxSteps  int
	BudgetUSD decimal.Decimal
	// PricesFile replaces the shipped price table.
	PricesFile string
	Version    string
	Getenv     func(string) string
	// Terminal opens the terminal for forms (ControllingTerminal by default).
	Terminal Terminal
}

// Streams are where the console reads and writes.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Run is the console agent: it connects to the server, offers the model
// the server's tools, and runs turns from --prompt or from each line of
// standard input until EOF, the budget, or a second Ctrl-C.
func Run(ctx context.Context, o Options, st Streams) error {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	model, err := llm.New(llm.Config{Provider: o.Provider, Model: o.Model, BaseURL: o.BaseURL, APIKey: getenv(llm.KeyEnv(o.Provider))})
	if err != nil {
		return err
	}
	prices, err := LoadPrices(o.PricesFile)
	if err != nil {
		return err
	}
	meter, err := NewMeter(prices, model.Name(), model.Model(), o.BudgetUSD)
	if err != nil {
		return err
	}
	// The process's own context ends on the first Ctrl-C; the agent
	// handles Ctrl-C itself (cancel the turn, then exit) and keeps
	// SIGTERM as an exit.
	base, stopBase := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBase()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	term := o.Terminal
	if term == nil {
		term = ControllingTerminal
	}
	cs, stderrTail, err := connect(base, o, getenv, FormHandler(term, st.Err))
	if err != nil {
		if tail := strings.TrimSpace(stderrTail()); tail != "" {
			return fmt.Errorf("%w\nthe server said: %s", err, messages.Printable(tail))
		}
		return err
	}
	defer cs.Close()
	s := &Session{MCP: cs, Model: model, Meter: meter, Out: st.Out, MaxSteps: o.MaxSteps}
	if err := s.ListTools(base, nil); err != nil {
		return err
	}
	fmt.Fprintf(st.Err, "agent: %s/%s, %d tools from the server; forms are answered on this terminal\n", messages.Printable(model.Name()), messages.Printable(model.Model()), len(s.Tools()))
	if !meter.Priced() {
		fmt.Fprintf(st.Err, "agent: the price table has no price for this model: cost is not counted\n")
	}

	turn := func(text string) (exit bool, err error) {
		tctx, cancel := context.WithCancel(base)
		defer cancel()
		done := make(chan struct{})
		var interrupted bool
		var mu sync.Mutex
		go func() {
			for {
				select {
				case <-done:
					return
				case sig := <-signals:
					mu.Lock()
					if sig != os.Interrupt || interrupted {
						mu.Unlock()
						stopBase()
						return
					}
					interrupted = true
					mu.Unlock()
					fmt.Fprintf(st.Err, "\nagent: turn cancelled (Ctrl-C again to exit)\n")
					cancel()
				}
			}
		}()
		res, err := s.Turn(tctx, text)
		close(done)
		fmt.Fprintf(st.Err, "agent: turn %d in / %d out tokens, %s; total %d in / %d out, %s", res.Usage.InputTokens, res.Usage.OutputTokens, FormatUSD(res.Cost),
			meter.Usage.InputTokens, meter.Usage.OutputTokens, FormatUSD(meter.Cost))
		if meter.Budget.IsPositive() {
			fmt.Fprintf(st.Err, " of %s", FormatUSD(meter.Budget))
		}
		fmt.Fprintln(st.Err)
		if base.Err() != nil {
			return true, nil
		}
		mu.Lock()
		wasInterrupted := interrupted
		mu.Unlock()
		if wasInterrupted {
			return false, nil
		}
		if errors.Is(err, ErrBudget) {
			return true, err
		}
		return false, err
	}

	if o.Prompt != "" {
		_, err := turn(o.Prompt)
		return err
	}
	// Standard input is read only when a prompt waits for a line: during
	// a turn the terminal belongs to the confirmation form.
	want, lines := make(chan struct{}), make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(st.In)
		for range want {
			if !sc.Scan() {
				return
			}
			lines <- sc.Text()
		}
	}()
	defer close(want)
	for {
		fmt.Fprintf(st.Err, "> ")
		want <- struct{}{}
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
			if !ok {
				return nil
			}
		case <-signals:
			return nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		exit, err := turn(line)
		if err != nil {
			if errors.Is(err, ErrBudget) {
				return fmt.Errorf("stopped: %w (%s of %s)", err, FormatUSD(meter.Cost), FormatUSD(meter.Budget))
			}
			fmt.Fprintf(st.Err, "agent: %s\n", messages.Printable(err.Error()))
		}
		if exit {
			return nil
		}
	}
}

// connect opens the MCP session: `serve` over stdio on the same home, or
// Streamable HTTP with the bearer token from GX_TOKEN. The client
// declares form elicitation, answered by form. stderrTail returns the end
// of what a stdio server wrote on stderr, for errors at start.
func connect(ctx context.Context, o Options, getenv func(string) string, form func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)) (*sdk.ClientSession, func() string, error) {
	client := sdk.NewClient(&sdk.Implementation{Name: "guarded-exchange-agent", Version: o.Version}, &sdk.ClientOptions{ElicitationHandler: form})
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if o.MCPURL != "" {
		token := getenv(EnvToken)
		if token == "" {
			return nil, func() string { return "" }, fmt.Errorf("--mcp-url needs the bearer token in %s", EnvToken)
		}
		hc := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
		cs, err := client.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: o.MCPURL, HTTPClient: hc}, nil)
		if err != nil {
			return nil, func() string { return "" }, fmt.Errorf("connect to %s: %w", messages.Printable(redactedURL(o.MCPURL)), err)
		}
		return cs, func() string { return "" }, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, func() string { return "" }, fmt.Errorf("cannot find this program to start the server: %w", err)
	}
	cmd := exec.Command(exe, append(append([]string{}, o.ServeArgs...), "serve")...)
	cmd.Env = serverEnv(os.Environ())
	tail := &tailBuffer{max: 4096}
	cmd.Stderr = tail
	detach(cmd)
	cs, err := client.Connect(cctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		return nil, tail.String, fmt.Errorf("start the server: %w", err)
	}
	return cs, tail.String, nil
}

// serverEnv is env without the model providers' API keys: the server
// needs none of them, so the process that holds the exchange keys never
// holds the model's.
func serverEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case llm.EnvAnthropicKey, llm.EnvOpenAIKey, llm.EnvCompatibleKey:
			continue
		}
		out = append(out, kv)
	}
	return out
}

// redactedURL is the address with its password, if any, as "xxxxx".
func redactedURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "the --mcp-url address"
	}
	return u.Redacted()
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
