package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/cli"
	"github.com/guarded-exchange/guarded-exchange/cli/agent/eval"
	"github.com/guarded-exchange/guarded-exchange/mcp"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// evalUser is the user each eval case trades as: created with a paper key
// the bench knows, so it can seed that account.
const evalUser = "eval"

// EvalBench returns the eval command's bench: each case on a fresh home
// on the paper venue, in this process.
func (r *Runtime) EvalBench() eval.Bench { return &paperBench{release: r.Release} }

// paperBench makes a fresh installation per case: init, the eval user
// with a paper key, the case's policy and kill switch, the seeded
// account, and an MCP server on the stack over an in-memory transport.
type paperBench struct {
	release string
}

// Open implements eval.Bench.
func (b *paperBench) Open(ctx context.Context, f *eval.CaseFile, c *eval.Case) (*sdk.ClientSession, map[string]string, func(), error) {
	var undo []func()
	closeAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	fail := func(err error) (*sdk.ClientSession, map[string]string, func(), error) {
		closeAll()
		return nil, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "gx-eval-")
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { os.RemoveAll(dir) })
	g := &cli.Globals{Home: filepath.Join(dir, "home"), MasterKeyFile: filepath.Join(dir, "config", "master.key"), User: "local", Venue: "paper"}
	quiet := slog.New(slog.DiscardHandler)
	rt := &Runtime{Release: b.release, Logger: quiet, Getenv: func(string) string { return "" }}
	if err := rt.Init(ctx, g, cli.IO{Out: io.Discard, Err: io.Discard}); err != nil {
		return fail(fmt.Errorf("init: %w", err))
	}
	p, err := resolvePaths(g)
	if err != nil {
		return fail(err)
	}
	key, err := checkInstallation(p)
	if err != nil {
		return fail(err)
	}
	lock, err := lockHome(p)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, lock.release)
	st, err := startStack(ctx, p, venueConfig{Name: "paper", Paper: true}, key, quiet, b.release, "eval", nil)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, st.close)

	paperKey, err := newPaperKey()
	if err != nil {
		return fail(err)
	}
	policy, err := f.EffectivePolicy(c)
	if err != nil {
		return fail(err)
	}
	setup := []messages.Command{
		&messages.CreateUserRequest{User: evalUser},
		&messages.AddCredentialRequest{User: evalUser, Environment: "paper", APIKey: paperKey.APIKey, APISecret: messages.NewSecret(paperKey.APISecret)},
		&messages.SetCeilingRequest{User: evalUser, Settings: policy},
	}
	if c.KillSwitch {
		setup = append(setup, &messages.SetKillSwitchRequest{User: evalUser, On: true, Level: messages.KillSwitchUser})
	}
	for _, cmd := range setup {
		if _, err := st.sys.Submit(ctx, cmd, messages.CLIOrigin(cmd, messages.ChannelInProcess, int64(os.Getuid()), int64(os.Getpid()), false)); err != nil {
			return fail(fmt.Errorf("%s: %w", cmd.CommandName(), err))
		}
	}
	orderIDs, err := seedPaperAccount(st.paper.Sim().Handler(), paperKey.APIKey, c.Seed)
	if err != nil {
		return fail(fmt.Errorf("seed: %w", err))
	}

	srv, err := mcp.NewServer(mcp.Options{Backend: st.sys, Principal: policyPrincipal(st.sys, evalUser), Venue: "paper", Version: b.release, Logger: quiet, StateKey: st.stateKey})
	if err != nil {
		return fail(err)
	}
	clientT, serverT := sdk.NewInMemoryTransports()
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Run(sctx, serverT) }()
	undo = append(undo, func() { stop(); <-served })
	// No elicitation declared and no CLI channel: an action to confirm
	// is refused (confirmation_channel_unavailable), never approved.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "guarded-exchange-eval", Version: b.release}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, func() { _ = cs.Close() })
	return cs, orderIDs, closeAll, nil
}

// seedPaperAccount puts the case's positions and external orders in the
// account through the simulator's own test API, in-process, and returns
// the orders' ids by client order id.
func seedPaperAccount(h http.Handler, apiKey string, seed eval.Seed) (map[string]string, error) {
	post := func(what string, body any) ([]byte, error) {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req := httptest.NewRequest(http.MethodPost, "/sim/accounts/"+apiKey+"/"+what, bytes.NewReader(b))
		req.RemoteAddr = "127.0.0.1:1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("%s: HTTP %d: %s", what, rec.Code, messages.Printable(rec.Body.String()))
		}
		return rec.Body.Bytes(), nil
	}
	ids := map[string]string{}
	if len(seed.Positions) > 0 {
		if _, err := post("positions", seed.Positions); err != nil {
			return nil, err
		}
	}
	if len(seed.Orders) == 0 {
		return ids, nil
	}
	orders := make([]map[string]any, 0, len(seed.Orders))
	for _, o := range seed.Orders {
		status := o.Status
		if status == "" {
			status = "New"
		}
		m := map[string]any{"category": "linear", "symbol": o.Symbol, "side": o.Side, "orderType": o.OrderType, "qty": o.Qty,
			"status": status, "orderLinkId": o.OrderLinkID, "timeInForce": "GTC"}
		if o.Price != "" {
			m["price"] = o.Price
		}
		if o.RejectReason != "" {
			m["rejectReason"] = o.RejectReason
		}
		orders = append(orders, m)
	}
	raw, err := post("orders", orders)
	if err != nil {
		return nil, err
	}
	var got []struct {
		OrderID     string `json:"orderId"`
		OrderLinkID string `json:"orderLinkId"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		return nil, err
	}
	if len(got) != len(seed.Orders) {
		return nil, errors.New("the simulator did not store every seeded order")
	}
	for _, o := range got {
		ids[o.OrderLinkID] = o.OrderID
	}
	return ids, nil
}
