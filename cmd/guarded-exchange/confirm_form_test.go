package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The client's own confirmation form (docs/tools.md "Confirmation", channel 1) through the
// built binary over stdio: the go-sdk client in both protocol eras, a
// restart between the two MRTR rounds, and Node clients
// (@modelcontextprotocol/sdk, 2025-11-25 with elicitation/create, and
// @modelcontextprotocol/client, 2026-07-28 with MRTR).

// formTTL is the shortest confirmation_ttl_s: "never answers" waits it out.
const formTTL = 10

// formInstall is an installation whose local user trades BTCUSDT with
// every place_order confirmed, the client UI trusted, a short TTL.
func formInstall(t *testing.T) install {
	t.Helper()
	in := newInstall(t)
	if r := run(t, in.env(), "", "admin", "policy", "set-ceiling", "--user", "local", "--profile", "trade", "--allow", "linear:BTCUSDT",
		"--confirm", "place_order", "--venue-ceiling", "paper", "--trust-client-ui", "true",
		"--confirmation-ttl", fmt.Sprint(formTTL)); r.code != 0 {
		t.Fatalf("set-ceiling: %d %s", r.code, r.stderr)
	}
	return in
}

// formBehaviours are the human's answers, in the order the tests play them.
var formBehaviours = []string{"accept", "decline", "cancel", "unticked", "never"}

// humanAnswer answers a form as the behaviour says; "never" waits until
// the request is cancelled.
func humanAnswer(ctx context.Context, behaviour string) (*sdk.ElicitResult, error) {
	switch behaviour {
	case "accept":
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	case "decline":
		return &sdk.ElicitResult{Action: "decline"}, nil
	case "cancel":
		return &sdk.ElicitResult{Action: "cancel"}, nil
	case "unticked":
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// formSession is a go-sdk client of `serve` over stdio that declared
// form elicitation and answers as *behaviour says.
type formSession struct {
	cs        *sdk.ClientSession
	mu        sync.Mutex
	behaviour string
	forms     []string // the messages shown
}

func connectForm(t *testing.T, in install, era string) *formSession {
	t.Helper()
	f := &formSession{}
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env()
	cmd.Stderr = &bytes.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "form-e2e"}, &sdk.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			f.mu.Lock()
			b := f.behaviour
			f.forms = append(f.forms, req.Params.Message)
			f.mu.Unlock()
			return humanAnswer(ctx, b)
		},
	})
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, &sdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	f.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return f
}

func structured(t *testing.T, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s", b)
	}
	return m
}

// openOrderPrices lists the prices of the open BTCUSDT orders.
func openOrderPrices(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_open_orders", Arguments: map[string]any{"category": "linear", "symbol": "BTCUSDT"}})
	if err != nil || res.IsError {
		t.Fatalf("get_open_orders: %v %+v", err, res)
	}
	var out struct {
		Orders []struct {
			Price string `json:"price"`
		} `json:"orders"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	var prices []string
	for _, o := range out.Orders {
		prices = append(prices, o.Price)
	}
	return prices
}

func formOrder(price int) map[string]any {
	return map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy", "order_type": "Limit", "qty": "0.01", "price": fmt.Sprint(price)}
}

// The go-sdk client over stdio, both eras: each answer of the human in
// turn. Only the ticked box sends an order; the others answer rejected
// (an unanswered 2026-07-28 form: the client gives up, the confirmation
// expires); the agent's answers never say what the human did.
func TestStdioClientFormBothEras(t *testing.T) {
	t.Parallel()
	for _, era := range []string{"", "2025-11-25"} {
		t.Run("era="+era, func(t *testing.T) {
			t.Parallel()
			in := formInstall(t)
			f := connectForm(t, in, era)
			for i, b := range formBehaviours {
				f.mu.Lock()
				f.behaviour = b
				f.mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), (formTTL+5)*time.Second)
				res, err := f.cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: formOrder(30000 + i)})
				cancel()
				f.mu.Lock()
				shown := len(f.forms)
				last := ""
				if shown > 0 {
					last = f.forms[shown-1]
				}
				f.mu.Unlock()
				if shown != i+1 || !strings.Contains(last, "BTCUSDT") || !strings.Contains(last, "cf_") {
					t.Fatalf("%s: %d forms shown; last:\n%s", b, shown, last)
				}
				switch {
				case b == "accept":
					if err != nil || res.IsError || structured(t, res)["status"] != "accepted" {
						t.Fatalf("accept: %v %+v", err, res)
					}
				case b == "never" && era == "":
					if err == nil {
						t.Fatalf("never: the call returned %+v", res)
					}
				default:
					if err != nil || res.IsError {
						t.Fatalf("%s: %v %+v", b, err, res)
					}
					out := structured(t, res)
					if out["status"] != "rejected" && !(b == "never" && out["status"] == "expired") {
						t.Fatalf("%s: %v", b, out)
					}
					text := res.Content[0].(*sdk.TextContent).Text
					for _, leak := range []string{"decline", "cancel", "unticked", "accept"} {
						if strings.Contains(text, leak) {
							t.Fatalf("%s: the agent's answer says %q: %s", b, leak, text)
						}
					}
				}
			}
			if prices := openOrderPrices(t, f.cs); len(prices) != 1 || prices[0] != "30000" {
				t.Fatalf("open orders %v, want the accepted one only", prices)
			}
		})
	}
}

// manualStdio is a 2026-07-28 go-sdk client of `serve` that does not
// fulfil input requests itself.
func manualStdio(t *testing.T, in install) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = in.env()
	cmd.Stderr = &bytes.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "form-manual"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("answered by hand")
		},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	}).Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// A restart between the two MRTR rounds is harmless: the state opens
// under the sub-key derived again from the master key, the confirmation
// is rebuilt from the journal, and the approval executes once; the same
// state replayed after another restart does nothing more.
func TestStdioFormAcrossRestart(t *testing.T) {
	t.Parallel()
	in := formInstall(t)
	order := formOrder(30000)
	first := manualStdio(t, in)
	res, err := first.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order", Arguments: order})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first round: %v %+v", err, res)
	}
	state := res.RequestState
	if err := first.Close(); err != nil {
		t.Fatalf("serve did not exit cleanly: %v", err)
	}
	ticked := sdk.InputResponseMap{"confirm": &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}

	second := manualStdio(t, in)
	res, err = second.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order", Arguments: order, RequestState: state, InputResponses: ticked})
	if err != nil || res.IsError || res.NeedsInput() || structured(t, res)["status"] != "accepted" {
		t.Fatalf("answer after the restart: %v %+v", err, res)
	}
	if prices := openOrderPrices(t, second); len(prices) != 1 {
		t.Fatalf("open orders after approval: %v", prices)
	}
	res, err = second.CallTool(context.Background(), &sdk.CallToolParams{Name: "place_order", Arguments: order, RequestState: state, InputResponses: ticked})
	if err != nil || !res.IsError {
		t.Fatalf("replay: %v %+v", err, res)
	}
	if prices := openOrderPrices(t, second); len(prices) != 1 {
		t.Fatalf("open orders after the replay: %v", prices)
	}
	_ = second.Close()
	// The journal has one order attempt and one client_ui decision.
	attempts, _ := orderRecords(t, in)
	if len(attempts) != 1 {
		t.Fatalf("%d order attempts journaled", len(attempts))
	}
}

const confirmNodeDir = "testdata/confirm-node"

// confirmNodeModules installs the pinned Node MCP clients with `npm ci`
// into a cache directory keyed by the lock file and returns it, with
// confirm.mjs copied in.
func confirmNodeModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found on PATH: the Node MCP clients are installed with npm from the registry")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not found on PATH: the Node MCP clients need node")
	}
	var files = map[string][]byte{}
	for _, name := range []string{"package.json", "package-lock.json", "confirm.mjs"} {
		b, err := os.ReadFile(filepath.Join(confirmNodeDir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	sum := sha256.Sum256(append(append([]byte{}, files["package.json"]...), files["package-lock.json"]...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "guarded-exchange", "confirm-node-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	marker := filepath.Join(dir, "node_modules", ".installed")
	if _, err := os.Stat(marker); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// nodeReport is what confirm.mjs prints.
type nodeReport struct {
	Client   string `json:"client"`
	Protocol string `json:"protocol"`
	Calls    map[string]struct {
		IsError    bool           `json:"isError"`
		Structured map[string]any `json:"structured"`
		Text       string         `json:"text"`
		Error      string         `json:"error"`
	} `json:"calls"`
	Forms []struct {
		Behaviour string         `json:"behaviour"`
		Message   string         `json:"message"`
		Schema    map[string]any `json:"schema"`
	} `json:"forms"`
	OpenOrders  []string `json:"openOrders"`
	NeverStatus string   `json:"neverStatus"`
}

// Node clients of both eras answer the form through their own
// elicitation handler: @modelcontextprotocol/sdk (2025-11-25, a classic
// elicitation/create) and @modelcontextprotocol/client (2026-07-28, MRTR
// fulfilled inside callTool), each accepting, declining, cancelling,
// leaving the box unticked and never answering.
func TestNodeClientsAnswerTheForm(t *testing.T) {
	t.Parallel()
	dir := confirmNodeModules(t)
	for _, c := range []struct{ name, protocol string }{{"sdk", "2025-11-25"}, {"client", "2026-07-28"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := formInstall(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "confirm.mjs", c.name, bin)
			cmd.Dir = dir
			cmd.Env = in.env()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node confirm.mjs %s: %v\n%s", c.name, err, stderr.String())
			}
			var r nodeReport
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("report: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			if r.Protocol != c.protocol {
				t.Fatalf("negotiated %q, want %q", r.Protocol, c.protocol)
			}
			if len(r.Forms) != len(formBehaviours) {
				t.Fatalf("%d forms shown, want %d: %+v", len(r.Forms), len(formBehaviours), r.Forms)
			}
			for i, f := range r.Forms {
				props, _ := f.Schema["properties"].(map[string]any)
				approve, _ := props["approve"].(map[string]any)
				req, _ := f.Schema["required"].([]any)
				if f.Behaviour != formBehaviours[i] || !strings.Contains(f.Message, "BTCUSDT") || len(props) != 1 ||
					approve["type"] != "boolean" || len(req) != 1 || req[0] != "approve" {
					t.Fatalf("form %d: %+v", i, f)
				}
			}
			for _, b := range formBehaviours {
				call, ok := r.Calls[b]
				switch {
				case !ok:
					t.Fatalf("%s: no call reported", b)
				case b == "accept":
					if call.IsError || call.Structured["status"] != "accepted" {
						t.Fatalf("accept: %+v", call)
					}
				case b == "never" && c.protocol == "2026-07-28":
					// The client gave up waiting for its own handler.
					if call.Error == "" {
						t.Fatalf("never: %+v", call)
					}
				default:
					st := call.Structured["status"]
					if call.IsError || (st != "rejected" && !(b == "never" && st == "expired")) {
						t.Fatalf("%s: %+v", b, call)
					}
					for _, leak := range []string{"decline", "cancel", "unticked", "accept"} {
						if strings.Contains(call.Text, leak) {
							t.Fatalf("%s: the agent's answer says %q: %s", b, leak, call.Text)
						}
					}
				}
			}
			if len(r.OpenOrders) != 1 || r.OpenOrders[0] != "30000" {
				t.Fatalf("open orders %v, want the accepted one only", r.OpenOrders)
			}
			// Unanswered: rejected by the server's wait (2025-11-25) or
			// expired in the actor (MRTR holds nothing open).
			if want := map[string]string{"sdk": "rejected", "client": "expired"}[c.name]; r.NeverStatus != want {
				t.Fatalf("the unanswered confirmation is %q, want %q", r.NeverStatus, want)
			}
		})
	}
}
