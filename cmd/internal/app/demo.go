package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Demo is the scripted walkthrough of docs/commands.md on the paper venue, in a
// throw-away home: init, a trade ceiling, serve as a child over a real
// stdio pipe driven by an MCP client, market reads, orders, an order parked
// for confirmation and approved through the control socket, its fill, a
// refused call, the kill switch and its refusal, then the journal dumped
// and verified.
func (r *Runtime) Demo(ctx context.Context, _ *cli.Globals, out cli.IO) error {
	tmp, err := os.MkdirTemp("", "guarded-exchange-demo-")
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	keep := envBool(r.getenv, "GX_DEMO_KEEP")
	if !keep {
		defer os.RemoveAll(tmp)
	}
	g := &cli.Globals{
		Home:          filepath.Join(tmp, "home"),
		MasterKeyFile: filepath.Join(tmp, "config", "master.key"),
		User:          "local",
		Venue:         "paper",
	}
	w := out.Out
	step := 0
	say := func(format string, args ...any) {
		step++
		fmt.Fprintf(w, "\n== %d. %s\n", step, fmt.Sprintf(format, args...))
	}

	logPath := filepath.Join(tmp, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return cli.CannotStart("%v", err)
	}
	defer logFile.Close()
	// The walkthrough's own in-process steps log to the file too, so the
	// terminal shows only the story.
	quiet := *r
	quiet.Logger = slog.New(slog.NewJSONHandler(logFile, nil))

	say("init a throw-away home in %s", tmp)
	if err := quiet.Init(ctx, g, cli.IO{Out: indent(w), Err: out.Err}); err != nil {
		return err
	}

	say("admin: a trade ceiling: `local` trades BTCUSDT on paper; an order worth %s USDT or more waits for a human", demoConfirmAbove)
	paper, none := messages.VenuePaper, []string{}
	tradeProfile, allow := messages.ProfileTrade, []string{"linear:BTCUSDT"}
	above := decimal.RequireFromString(demoConfirmAbove)
	if _, err := quiet.Deliver(ctx, g, &messages.SetCeilingRequest{User: g.User, Settings: messages.PolicySettings{
		Profile: &tradeProfile, Allow: &allow, ConfirmActions: &none, ConfirmAboveNotionalUSDT: &above, VenueCeiling: &paper}}); err != nil {
		return err
	}
	fmt.Fprintf(w, "   profile trade, allowlist [linear:BTCUSDT], confirm_actions none, confirm_above_notional_usdt %s\n", demoConfirmAbove)

	say("start `guarded-exchange serve` as a child over a real stdio pipe")
	exe, err := os.Executable()
	if err != nil {
		return cli.CannotStart("cannot find this binary: %v", err)
	}
	cmd := exec.CommandContext(ctx, exe, "serve")
	cmd.Env = append(os.Environ(),
		"GX_HOME="+g.Home, "GX_MASTER_KEY_FILE="+g.MasterKeyFile, "GX_USER="+g.User, "GX_VENUE=paper", "GX_ENV_FILE=",
		"GX_CONFIRM_CLI_ENABLED=true", "GX_CONTROL_SOCKET=")
	cmd.Stderr = logFile
	client := sdk.NewClient(&sdk.Implementation{Name: "guarded-exchange-demo", Version: r.Release}, nil)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		return cli.Refused("connect to serve: %v (server log: %s)", err, logPath)
	}
	init := cs.InitializeResult()
	fmt.Fprintf(w, "   connected: %s %s, protocol %s; server log (JSON) in %s\n",
		init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion, logPath)

	say("list the tools this principal may use")
	tools, err := cs.ListTools(cctx, nil)
	if err != nil {
		return cli.Refused("tools/list: %v", err)
	}
	for _, t := range tools.Tools {
		hint := "read-only"
		if t.Annotations == nil || !t.Annotations.ReadOnlyHint {
			hint = "changes state"
		}
		fmt.Fprintf(w, "   %-16s %-13s %s\n", t.Name, hint, t.Description)
	}

	say("get_ticker BTCUSDT linear")
	var tk struct {
		Venue, Symbol, Category, Time string
		LastPrice                     string `json:"last_price"`
		Bid                           string `json:"bid1_price"`
		Ask                           string `json:"ask1_price"`
		Derivatives                   *struct {
			Mark    string `json:"mark_price"`
			Funding string `json:"funding_rate"`
		}
	}
	if err := callTool(cctx, cs, "get_ticker", map[string]any{"symbol": "BTCUSDT", "category": "linear"}, &tk); err != nil {
		return err
	}
	fmt.Fprintf(w, "   venue %s: last %s, bid %s, ask %s", tk.Venue, tk.LastPrice, tk.Bid, tk.Ask)
	if tk.Derivatives != nil {
		fmt.Fprintf(w, ", mark %s, funding %s", tk.Derivatives.Mark, tk.Derivatives.Funding)
	}
	fmt.Fprintf(w, " (%s)\n", tk.Time)

	say("get_orderbook BTCUSDT spot, 5 levels")
	var ob struct {
		Venue      string
		Bids, Asks [][2]string
	}
	if err := callTool(cctx, cs, "get_orderbook", map[string]any{"symbol": "BTCUSDT", "category": "spot", "limit": 5}, &ob); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %-24s | %s\n", "bids (price x size)", "asks (price x size)")
	for i := 0; i < max(len(ob.Bids), len(ob.Asks)); i++ {
		var b, a string
		if i < len(ob.Bids) {
			b = ob.Bids[i][0] + " x " + ob.Bids[i][1]
		}
		if i < len(ob.Asks) {
			a = ob.Asks[i][0] + " x " + ob.Asks[i][1]
		}
		fmt.Fprintf(w, "   %-24s | %s\n", b, a)
	}

	say("get_klines ETHUSDT linear, 1 h, last 5 candles")
	var kl struct {
		Klines [][7]string
	}
	if err := callTool(cctx, cs, "get_klines", map[string]any{"symbol": "ETHUSDT", "category": "linear", "interval": "60", "limit": 5}, &kl); err != nil {
		return err
	}
	for _, k := range kl.Klines {
		fmt.Fprintf(w, "   %s  O %s  H %s  L %s  C %s  V %s\n", k[0], k[1], k[2], k[3], k[4], k[5])
	}

	say("get_balances with the paper key init stored (sealed in the journal)")
	var bal struct {
		Venue       string `json:"venue"`
		TotalEquity string `json:"total_equity_usd"`
		Coins       []struct {
			Coin          string `json:"coin"`
			WalletBalance string `json:"wallet_balance"`
			UsdValue      string `json:"usd_value"`
		} `json:"coins"`
	}
	if err := callTool(cctx, cs, "get_balances", map[string]any{}, &bal); err != nil {
		return err
	}
	fmt.Fprintf(w, "   venue %s: total equity %s USD\n", bal.Venue, bal.TotalEquity)
	for _, c := range bal.Coins {
		fmt.Fprintf(w, "   %-6s %s (%s USD)\n", c.Coin, c.WalletBalance, c.UsdValue)
	}

	say("get_positions")
	var pos struct {
		Positions []struct {
			Symbol, Side, Size string
			AvgPrice           string `json:"avg_price"`
		} `json:"positions"`
		HasMore bool `json:"has_more"`
	}
	if err := callTool(cctx, cs, "get_positions", map[string]any{}, &pos); err != nil {
		return err
	}
	if len(pos.Positions) == 0 {
		fmt.Fprintln(w, "   no open positions yet")
	}
	for _, p := range pos.Positions {
		fmt.Fprintf(w, "   %s %s %s @ %s\n", p.Symbol, p.Side, p.Size, p.AvgPrice)
	}

	say("get_my_policy: the agent may read its policy, never change it")
	var pol struct {
		KillSwitch string `json:"kill_switch"`
		Effective  struct {
			Profile          string   `json:"profile"`
			Allow            []string `json:"allow"`
			MaxOrderNotional string   `json:"max_order_notional_usdt"`
			MaxLeverage      string   `json:"max_leverage"`
		} `json:"effective"`
	}
	if err := callTool(cctx, cs, "get_my_policy", map[string]any{}, &pol); err != nil {
		return err
	}
	fmt.Fprintf(w, "   profile %s, allowlist %v, max order %s USDT, max leverage x%s, kill switch %s\n",
		pol.Effective.Profile, pol.Effective.Allow, pol.Effective.MaxOrderNotional, pol.Effective.MaxLeverage, pol.KillSwitch)

	if err := demoTrading(cctx, cs, w, say, tk.Bid); err != nil {
		return err
	}
	if err := demoConfirmation(cctx, &quiet, g, cs, w, say, tk.Ask); err != nil {
		return err
	}

	say("a bad call is refused with a stable code (a number where a string is required)")
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "get_ticker", Arguments: map[string]any{"symbol": 42, "category": "linear"}})
	if err != nil {
		return cli.Refused("get_ticker: %v", err)
	}
	fmt.Fprintf(w, "   isError=%v %s\n", res.IsError, textOf(res))

	say("activate_kill_switch: the agent can turn it on; nothing it sends turns it off")
	var ks struct {
		KillSwitch string `json:"kill_switch"`
		Message    string `json:"message"`
	}
	if err := callTool(cctx, cs, "activate_kill_switch", map[string]any{}, &ks); err != nil {
		return err
	}
	fmt.Fprintf(w, "   kill switch %s: %s\n", ks.KillSwitch, ks.Message)

	say("place_order under the kill switch: refused, nothing sent")
	res, err = cs.CallTool(cctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear",
		"side": "Buy", "order_type": "Market", "qty": "0.002"}})
	if err != nil {
		return cli.Refused("place_order: %v", err)
	}
	fmt.Fprintf(w, "   isError=%v %s\n", res.IsError, textOf(res))

	say("stop the server (close its stdin)")
	if err := cs.Close(); err != nil {
		fmt.Fprintf(w, "   server exit: %v\n", err)
	} else {
		fmt.Fprintln(w, "   server exited")
	}

	say("journal dump --format table")
	if err := r.JournalDump(ctx, g, cli.DumpOptions{Format: "table"}, cli.IO{Out: indent(w), Err: out.Err}); err != nil {
		return err
	}
	say("journal verify")
	if err := r.JournalVerify(ctx, g, "", "", cli.IO{Out: indent(w), Err: out.Err}); err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(w, "\nkept %s (GX_DEMO_KEEP=true)\n", tmp)
	}
	fmt.Fprintln(w, "\ndemo finished")
	return nil
}

// callTool calls a tool and decodes its structured result into out; a tool
// error is returned as a refusal with its JSON.
func callTool(ctx context.Context, cs *sdk.ClientSession, name string, args map[string]any, out any) error {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return cli.Refused("%s: %v", name, err)
	}
	text := textOf(res)
	if res.IsError {
		return cli.Refused("%s: %s", name, text)
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		return cli.Refused("%s: unexpected answer: %v", name, err)
	}
	return nil
}

func textOf(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// indent prefixes every line written through it with three spaces.
func indent(w io.Writer) io.Writer { return &indenter{w: w, bol: true} }

type indenter struct {
	w   io.Writer
	bol bool
}

func (i *indenter) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if i.bol {
			b.WriteString("   ")
		}
		b.WriteRune(c)
		i.bol = c == '\n'
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// demoTrading places a resting limit order, amends it, cancels it, and
// fills a small market order, through the one action path.
func demoTrading(ctx context.Context, cs *sdk.ClientSession, w io.Writer, say func(string, ...any), bid string) error {
	b, err := decimal.NewFromString(bid)
	if err != nil || !b.IsPositive() {
		return cli.Refused("demo: no bid price to place a resting order below")
	}
	rest := b.Mul(decimal.RequireFromString("0.9")).Floor()
	type orderOut struct {
		Status        string `json:"status"`
		OrderID       string `json:"order_id"`
		ClientOrderID string `json:"client_order_id"`
		OrderStatus   string `json:"order_status"`
		Qty           string `json:"qty"`
		Price         string `json:"price"`
		SentAs        string `json:"sent_as"`
		FilledQty     string `json:"filled_qty"`
		Origin        string `json:"origin"`
	}
	say("place_order: a Limit buy of 0.001 BTCUSDT at %s, 10%% under the bid: it rests (below the confirmation threshold)", rest)
	var placed orderOut
	if err := callTool(ctx, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy",
		"order_type": "Limit", "qty": "0.001", "price": rest.String(), "idempotency_key": "demo-1"}, &placed); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s, resting as %s (order_status %s), client order id %s, origin %s\n",
		placed.Status, placed.SentAs, placed.OrderStatus, placed.ClientOrderID, placed.Origin)

	lower := rest.Sub(decimal.NewFromInt(100))
	say("amend_order: move it down to %s (a better price: not risk-increasing)", lower)
	var amended orderOut
	if err := callTool(ctx, cs, "amend_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": placed.OrderID,
		"price": lower.String()}, &amended); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s: price %s, order_status %s\n", amended.Status, amended.Price, amended.OrderStatus)

	say("cancel_order: cancel it by its order id")
	var cancelled orderOut
	if err := callTool(ctx, cs, "cancel_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "order_id": placed.OrderID}, &cancelled); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s (order_status %s), origin %s\n", cancelled.Status, cancelled.OrderStatus, cancelled.Origin)

	say("place_order: a Market buy of 0.001, sent as Limit IOC at the ask + slippage_pct")
	var market orderOut
	if err := callTool(ctx, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy",
		"order_type": "Market", "qty": "0.001"}, &market); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %s as %s at worst %s: order_status %s, filled %s\n", market.Status, market.SentAs, market.Price, market.OrderStatus, market.FilledQty)
	return nil
}

// demoConfirmAbove is the demo's confirm_above_notional_usdt.
const demoConfirmAbove = "200"

// demoConfirmation parks an order above the confirmation threshold,
// prints the server's plan, approves it over the control socket as a human
// at the CLI would (`confirm approve ID --yes`), and shows the fill.
func demoConfirmation(ctx context.Context, r *Runtime, g *cli.Globals, cs *sdk.ClientSession, w io.Writer, say func(string, ...any), ask string) error {
	a, err := decimal.NewFromString(ask)
	if err != nil || !a.IsPositive() {
		return cli.Refused("demo: no ask price to size the order")
	}
	qty := decimal.NewFromInt(300).Div(a).RoundUp(3)
	say("place_order: a Market buy of %s (about 300 USDT): above the threshold, it parks for a human", qty)
	var pending struct {
		Status         string                `json:"status"`
		ConfirmationID string                `json:"confirmation_id"`
		ExpiresAt      string                `json:"expires_at"`
		ShownToUser    *messages.ShownToUser `json:"shown_to_user"`
		NextStep       string                `json:"next_step"`
	}
	if err := callTool(ctx, cs, "place_order", map[string]any{"symbol": "BTCUSDT", "category": "linear", "side": "Buy",
		"order_type": "Market", "qty": qty.String()}, &pending); err != nil {
		return err
	}
	if pending.Status != "pending" || pending.ShownToUser == nil {
		return cli.Refused("demo: the order did not park (status %s)", pending.Status)
	}
	fmt.Fprintf(w, "   status %s, confirmation %s, expires %s\n   the human sees the server's plan: %s\n   next step for the agent: %s\n",
		pending.Status, pending.ConfirmationID, pending.ExpiresAt, pending.ShownToUser.Summary, pending.NextStep)

	say("a human approves it through the control socket (`guarded-exchange confirm approve %s --yes`)", pending.ConfirmationID)
	res, err := r.DeliverToServer(ctx, g, &messages.DecideConfirmationCommand{User: g.User, ConfirmationID: pending.ConfirmationID,
		Decision: messages.DecisionApprove, Channel: messages.ConfirmChannelCLI})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return cli.Refused("demo: %v", err)
	}
	var filled struct {
		Status        string `json:"status"`
		ClientOrderID string `json:"client_order_id"`
		OrderStatus   string `json:"order_status"`
		Price         string `json:"price"`
		FilledQty     string `json:"filled_qty"`
	}
	if err := json.Unmarshal(raw, &filled); err != nil {
		return cli.Refused("demo: %v", err)
	}
	say("the fill: executed by the server as a message of its own, at the worst price shown")
	fmt.Fprintf(w, "   %s at worst %s: order_status %s, filled %s, client order id %s (derived from the confirmation id)\n",
		filled.Status, filled.Price, filled.OrderStatus, filled.FilledQty, filled.ClientOrderID)
	return nil
}
