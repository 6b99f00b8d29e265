package messages

import "github.com/shopspring/decimal"

// The paper account (`paper status`, `paper reset`): the embedded
// simulator's account of a user, shown at a glance and started over only
// on a human's explicit command (docs/simulator.md "Durable state").

// PaperStatusRequest asks for a user's paper account at a glance. Answer:
// *PaperAccountView.
type PaperStatusRequest struct {
	User string `json:"user"`
}

// PaperResetRequest starts a user's paper account over with the opening
// balance: open orders cancelled, positions closed, wallet replaced. It is
// journaled (paper_reset) before the simulator applies it. Answer:
// *PaperAccountView of the account as it was (what the reset dropped).
type PaperResetRequest struct {
	User string `json:"user"`
}

// CommandName implements Command.
func (*PaperStatusRequest) CommandName() string { return "paper.status" }

// TargetUser implements UserCommand.
func (r *PaperStatusRequest) TargetUser() string { return r.User }

// CommandName implements Command.
func (*PaperResetRequest) CommandName() string { return "paper.reset" }

// TargetUser implements UserCommand.
func (r *PaperResetRequest) TargetUser() string { return r.User }

// PaperAccountView is a paper account at a glance. OrderLinkID is the
// client's text, untrusted like every such field of an account read.
type PaperAccountView struct {
	User       string             `json:"user"`
	Balances   []PaperBalance     `json:"balances"`
	OpenOrders []PaperOpenOrder   `json:"open_orders"`
	Positions  []PaperPositionRow `json:"positions"`
	// Reset is true on the answer of paper.reset: the account shown is the
	// one that was dropped, and OpeningUSDT is the new wallet.
	Reset       bool            `json:"reset,omitempty"`
	OpeningUSDT decimal.Decimal `json:"opening_usdt"`
}

// PaperBalance is one coin of a paper wallet.
type PaperBalance struct {
	Coin          string          `json:"coin"`
	WalletBalance decimal.Decimal `json:"wallet_balance"`
}

// PaperOpenOrder is one open order of a paper account.
type PaperOpenOrder struct {
	Category    string          `json:"category"`
	Symbol      string          `json:"symbol"`
	OrderID     string          `json:"order_id"`
	OrderLinkID string          `json:"order_link_id"`
	Side        string          `json:"side"`
	OrderType   string          `json:"order_type"`
	Status      string          `json:"status"`
	Price       decimal.Decimal `json:"price"`
	Qty         decimal.Decimal `json:"qty"`
	LeavesQty   decimal.Decimal `json:"leaves_qty"`
}

// PaperPositionRow is one open linear position of a paper account.
type PaperPositionRow struct {
	Symbol         string          `json:"symbol"`
	Side           string          `json:"side"`
	Size           decimal.Decimal `json:"size"`
	AvgPrice       decimal.Decimal `json:"avg_price"`
	Leverage       decimal.Decimal `json:"leverage"`
	TakeProfit     decimal.Decimal `json:"take_profit"`
	StopLoss       decimal.Decimal `json:"stop_loss"`
	CumRealisedPnl decimal.Decimal `json:"cum_realised_pnl"`
}

// PaperResetEvent is journaled as paper_reset (a server record, actor
// system:server), before the simulator resets the account: whose account,
// who asked on which channel, what was dropped (the wallet, how many open
// orders and positions) and the opening wallet it starts over with.
type PaperResetEvent struct {
	User        string          `json:"user"`
	By          string          `json:"by"` // the journal actor of the human who asked
	Channel     string          `json:"channel,omitempty"`
	Dropped     []PaperBalance  `json:"dropped_balances"`
	OpenOrders  int             `json:"open_orders"`
	Positions   int             `json:"positions"`
	OpeningUSDT decimal.Decimal `json:"opening_usdt"`
}
