package mcp

import (
	"context"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// wait_for_update: watching instead of polling. The call waits on the
// user's private stream (never on the exchange) and returns the rows of
// the first push that shows a change to the order, or to the user's orders
// and positions on the symbol.

// waitMaxRows bounds the rows of one answer (a push holds a few).
const waitMaxRows = 20

// MaxWaitsPerSession bounds the wait_for_update calls of one session in
// flight. It stays well below MaxInFlight, the stdio transport's bound on
// unanswered requests, so a session full of waits still has room for
// pings and other calls (and the dead-man switch still hears it).
const MaxWaitsPerSession = 16

// waitCounter counts each session's wait_for_update calls in flight.
type waitCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// take takes a slot for key; false when the session is at the bound.
func (w *waitCounter) take(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	if w.n[key] >= MaxWaitsPerSession {
		return false
	}
	w.n[key]++
	return true
}

// release gives key's slot back.
func (w *waitCounter) release(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[key]--; w.n[key] <= 0 {
		delete(w.n, key)
	}
}

func (s *server) waitTools() []*tool {
	return []*tool{{
		name:        "wait_for_update",
		title:       "Wait for an order or position update",
		description: "Wait up to timeout_s for a change to an order (order_id) or your orders and positions on a symbol, instead of polling. Returns the changed rows.",
		kind:        KindRead,
		schema:      inputSchema[waitArgs](),
		handle:      s.waitForUpdate,
	}}
}

type waitOut struct {
	Venue     string        `json:"venue"`
	Changed   bool          `json:"changed"`
	WaitedMS  int64         `json:"waited_ms"`
	Orders    []orderRow    `json:"orders,omitempty"`
	Positions []positionRow `json:"positions,omitempty"`
	// Interrupted: the stream reconnected or lost updates while waiting.
	Interrupted   bool   `json:"interrupted,omitempty"`
	Omitted       int    `json:"omitted,omitempty"`
	Notice        string `json:"notice,omitempty"`
	UntrustedText string `json:"untrusted_text,omitempty"`
}

func (s *server) waitForUpdate(ctx context.Context, c *call) (any, error) {
	a := c.args
	orderID := a.str("order_id", false, messages.OrderIDRE, "must be the order_id of get_open_orders or place_order")
	symbol := a.str("symbol", false, symbolPattern, symbolReason)
	_, given := a.raw("timeout_s")
	timeout := a.integer("timeout_s", 0, 1, int(messages.MaxWaitForUpdate/time.Second))
	if err := a.done(); err != nil {
		return nil, err
	}
	switch {
	case !given:
		return nil, messages.InvalidParams("timeout_s", "required: seconds to wait, 1 to 30")
	case orderID == "" && symbol == "":
		return nil, messages.InvalidParams("order_id", "give order_id, symbol or both")
	}
	var ss *sdk.ServerSession
	if c.req != nil {
		ss, _ = c.req.GetSession().(*sdk.ServerSession)
	}
	key := sessionKey(ss, c.principal.TokenID)
	if !s.waits.take(key) {
		return nil, &messages.Error{Code: messages.CodeRateLimited, Message: "too many wait_for_update calls are waiting in this session",
			NextStep: "wait for one to answer before starting another", RetryAfterS: 1, Details: map[string]any{"limit": MaxWaitsPerSession}}
	}
	defer s.waits.release(key)
	start := time.Now()
	ans, err := s.opts.Backend.WaitForUpdate(ctx, &messages.WaitForUpdateRequest{User: c.principal.User, OrderID: orderID, Symbol: symbol,
		Timeout: time.Duration(timeout) * time.Second})
	if err != nil {
		return nil, err
	}
	out := waitOut{Venue: s.opts.Venue, Changed: ans.Changed, Interrupted: ans.Interrupted, WaitedMS: time.Since(start).Milliseconds()}
	var u untrustedText
	for i := range ans.Orders {
		if len(out.Orders)+len(out.Positions) == waitMaxRows {
			out.Omitted++
			continue
		}
		if r, ok := orderRowOf(&ans.Orders[i], &u); ok {
			out.Orders = append(out.Orders, r)
		} else {
			out.Omitted++
		}
	}
	for i := range ans.Positions {
		if len(out.Orders)+len(out.Positions) == waitMaxRows {
			out.Omitted++
			continue
		}
		if r, ok := positionRowOf(&ans.Positions[i], &u); ok {
			out.Positions = append(out.Positions, r)
		} else {
			out.Omitted++
		}
	}
	out.UntrustedText = u.String()
	switch {
	case ans.Interrupted:
		out.Notice = "the private stream reconnected while waiting, so a change may have been missed: read get_open_orders or get_positions, then wait again"
	case !ans.Changed:
		out.Notice = "nothing changed within timeout_s; call again to keep waiting"
	case out.Omitted > 0:
		out.Notice = "some rows were left out; read get_open_orders or get_positions for the whole state"
	}
	return out, nil
}
