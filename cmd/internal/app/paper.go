package app

import (
	"context"
	"errors"
	"sort"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue/keys"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// The paper account's commands (`paper status`, `paper reset`). The
// embedded simulator belongs to this process, not to an actor, so the
// stack serves them itself, the same way whether they came over the
// control socket or from an in-process CLI; every other command goes to
// the actors. A reset is journaled (paper_reset) before the simulator
// applies it; the simulator then sends the cancelled orders, the flat
// positions and the new wallet on the user's private stream, where the
// venue actor takes them like any other update (docs/simulator.md
// "Durable state").

// Submit implements control.Backend: paper commands here, the rest to
// actors.System.Submit.
func (st *stack) Submit(ctx context.Context, cmd messages.Command, origin messages.Origin) (any, error) {
	switch c := cmd.(type) {
	case *messages.PaperStatusRequest:
		return st.paperStatus(ctx, c, origin)
	case *messages.PaperResetRequest:
		return st.paperReset(ctx, c, origin)
	}
	return st.sys.Submit(ctx, cmd, origin)
}

// JournalJSON implements control.Backend.
func (st *stack) JournalJSON(ctx context.Context, typ messages.RecordType, user, actorName string, v any) (wal.Record, error) {
	return st.sys.JournalJSON(ctx, typ, user, actorName, v)
}

// paperStatus answers paper.status.
func (st *stack) paperStatus(ctx context.Context, c *messages.PaperStatusRequest, origin messages.Origin) (any, error) {
	if e := messages.Permit(origin, c); e != nil {
		return nil, e
	}
	apiKey, err := st.paperKeyOf(ctx, c.User, origin)
	if err != nil {
		return nil, err
	}
	acct, err := st.paper.Sim().Account(apiKey)
	if err != nil {
		return nil, paperAccountError(err)
	}
	return paperView(c.User, acct, false), nil
}

// paperReset answers paper.reset: journal first, then reset.
func (st *stack) paperReset(ctx context.Context, c *messages.PaperResetRequest, origin messages.Origin) (any, error) {
	if e := messages.Permit(origin, c); e != nil {
		return nil, e
	}
	apiKey, err := st.paperKeyOf(ctx, c.User, origin)
	if err != nil {
		return nil, err
	}
	now, err := st.paper.Sim().Account(apiKey)
	if err != nil {
		return nil, paperAccountError(err)
	}
	v := paperView(c.User, now, true)
	if _, err := st.sys.JournalJSON(ctx, messages.RecordPaperReset, "", messages.ActorSystem, messages.PaperResetEvent{
		User: c.User, By: origin.Actor(), Channel: origin.ChannelText(),
		Dropped: v.Balances, OpenOrders: len(v.OpenOrders), Positions: len(v.Positions), OpeningUSDT: v.OpeningUSDT,
	}); err != nil {
		return nil, err
	}
	lost, err := st.paper.Sim().ResetAccount(apiKey, paperWallet())
	if err != nil {
		return nil, paperAccountError(err)
	}
	return paperView(c.User, lost, true), nil
}

// paperKeyOf returns the API key of user's paper account: the stored
// paper key, found among the simulator's keys by its fingerprint.
func (st *stack) paperKeyOf(ctx context.Context, user string, origin messages.Origin) (string, error) {
	if st.paper == nil {
		return "", messages.InvalidParams("venue", "the running server trades on "+st.venue.Name+", not on paper; stop it to use the paper commands")
	}
	res, err := st.sys.Submit(ctx, &messages.ShowCredentialRequest{User: user, Environment: "paper"}, origin)
	if err != nil {
		return "", err
	}
	cv, ok := res.(*messages.CredentialView)
	if !ok || !cv.Present || cv.Fingerprint == "" {
		return "", &messages.Error{Code: messages.CodeNotFound, Message: "this user has no paper account (no paper key is stored)",
			NextStep: "add one with `guarded-exchange keys add --venue paper`, outside the chat"}
	}
	for _, k := range st.paper.Sim().APIKeys() {
		if keys.Fingerprint(k) == cv.Fingerprint {
			return k, nil
		}
	}
	return "", &messages.Error{Code: messages.CodeNotFound, Message: "the paper venue does not hold this user's key",
		NextStep: "run `guarded-exchange doctor`"}
}

// paperAccountError maps the simulator's refusal to a stable code.
func paperAccountError(err error) error {
	if errors.Is(err, sim.ErrUnknownKey) {
		return &messages.Error{Code: messages.CodeNotFound, Message: "the paper venue does not hold this user's key", NextStep: "run `guarded-exchange doctor`"}
	}
	return messages.Internal(err)
}

// paperView is the answer of the paper commands.
func paperView(user string, a sim.PaperAccount, reset bool) *messages.PaperAccountView {
	v := &messages.PaperAccountView{User: user, Reset: reset, OpeningUSDT: decimal.NewFromInt(paperStartingUSDT),
		Balances: []messages.PaperBalance{}, OpenOrders: []messages.PaperOpenOrder{}, Positions: []messages.PaperPositionRow{}}
	for coin, amount := range a.Balances {
		v.Balances = append(v.Balances, messages.PaperBalance{Coin: coin, WalletBalance: amount})
	}
	sort.Slice(v.Balances, func(i, j int) bool { return v.Balances[i].Coin < v.Balances[j].Coin })
	for _, o := range a.OpenOrders {
		v.OpenOrders = append(v.OpenOrders, messages.PaperOpenOrder{Category: o.Category, Symbol: o.Symbol, OrderID: o.OrderID,
			OrderLinkID: o.OrderLinkID, Side: o.Side, OrderType: o.OrderType, Status: o.Status, Price: o.Price, Qty: o.Qty, LeavesQty: o.LeavesQty})
	}
	for _, p := range a.Positions {
		v.Positions = append(v.Positions, messages.PaperPositionRow{Symbol: p.Symbol, Side: p.Side, Size: p.Size, AvgPrice: p.AvgPrice,
			Leverage: p.Leverage, TakeProfit: p.TakeProfit, StopLoss: p.StopLoss, CumRealisedPnl: p.CumRealisedPnl})
	}
	return v
}
