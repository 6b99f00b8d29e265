package messages

import (
	"time"

	"github.com/shopspring/decimal"
)

// Account reads (docs/tools.md: get_balances, get_positions, get_open_orders,
// get_order_history, get_trades) return the values below. They are copies
// of what the exchange reported at the time of the read: nobody holds a
// pointer into venue state.
//
// Untrusted text: every string field that is free text chosen by someone
// other than this server (OrderLinkID, RejectReason, ExecType, FeeCurrency,
// the permission names of APIKeyInfo, and any status the exchange may add
// later) comes from the exchange and must be treated as data, never as
// instructions. The MCP layer puts such text only in untrusted_text
// (docs/errors.md); Message and NextStep never contain it.
//
// Decimals are exact (never float64); a field the exchange left empty ("")
// is zero. Times are UTC; a field the exchange left empty or "0" is the
// zero time.

// APIKeyInfo is what the exchange says about the API key in use (Bybit GET
// /v5/user/query-api). docs/invariants.md "Keys" decides from it whether a key is accepted.
type APIKeyInfo struct {
	// KeyID is the exchange's id of the key record (not the key itself).
	KeyID string
	// ReadOnly is true when the key may only read (Bybit readOnly 1).
	ReadOnly bool
	// Permissions maps a permission group ("ContractTrade", "Spot",
	// "Wallet", ...) to the permissions granted in it (["Order",
	// "Position"]). A group with nothing granted maps to an empty slice.
	// Group and permission names are exchange text; unknown ones must be
	// treated as unknown permissions, not ignored.
	Permissions map[string][]string
	// IPs are the bound IP addresses; ["*"] means the key is not bound.
	IPs []string
	// ExpiresAt is when the key expires; zero means no expiry.
	ExpiresAt time.Time
	// CreatedAt is when the key was created; zero if unknown.
	CreatedAt time.Time
	// UID is the exchange account (user) id the key belongs to.
	UID string
}

// WalletBalance is the unified account's balance (Bybit GET
// /v5/account/wallet-balance, accountType UNIFIED). The Total* fields are
// in USD, summed over every coin by the exchange.
type WalletBalance struct {
	// AccountType is "UNIFIED".
	AccountType string
	// TotalEquity is the sum of every coin's equity in USD.
	TotalEquity decimal.Decimal
	// TotalWalletBalance is the sum of every coin's wallet balance in USD.
	TotalWalletBalance decimal.Decimal
	// TotalAvailableBalance is what is left for new positions and orders
	// (cross margin), in USD.
	TotalAvailableBalance decimal.Decimal
	// TotalMarginBalance is wallet balance plus unrealised perpetual PnL,
	// in USD.
	TotalMarginBalance decimal.Decimal
	// TotalPerpUPL is the unrealised PnL of perpetual and futures
	// positions, in USD.
	TotalPerpUPL decimal.Decimal
	// TotalInitialMargin and TotalMaintenanceMargin are the margin in use,
	// in USD.
	TotalInitialMargin     decimal.Decimal
	TotalMaintenanceMargin decimal.Decimal
	// Coins lists one entry per coin, in the exchange's order.
	Coins []CoinBalance
}

// CoinBalance is one coin of a WalletBalance; amounts are in that coin
// except UsdValue.
type CoinBalance struct {
	// Coin is the coin name, e.g. "USDT" or "BTC".
	Coin string
	// Equity is WalletBalance plus UnrealisedPnl.
	Equity decimal.Decimal
	// WalletBalance is the coin's balance.
	WalletBalance decimal.Decimal
	// Locked is the part held by open spot orders.
	Locked decimal.Decimal
	// UnrealisedPnl is the unrealised PnL of positions settled in the coin.
	UnrealisedPnl decimal.Decimal
	// CumRealisedPnl is the realised PnL of positions settled in the coin.
	CumRealisedPnl decimal.Decimal
	// UsdValue is Equity in USD.
	UsdValue decimal.Decimal
	// TotalOrderIM, TotalPositionIM and TotalPositionMM are the initial
	// margin of open orders, and the initial and maintenance margin of
	// positions, in the coin.
	TotalOrderIM    decimal.Decimal
	TotalPositionIM decimal.Decimal
	TotalPositionMM decimal.Decimal
	// BorrowAmount is the borrowed amount of the coin.
	BorrowAmount decimal.Decimal
}

// Position is one derivatives position (Bybit GET /v5/position/list). The
// server supports one-way mode only, where PositionIdx is 0; a flat
// position has Side "" and Size zero.
type Position struct {
	Category Category
	Symbol   string
	// Side is "Buy" (long), "Sell" (short) or "" (flat).
	Side string
	// Size is the absolute position size in the base coin, ≥ 0.
	Size decimal.Decimal
	// AvgPrice is the entry price (zero when flat).
	AvgPrice      decimal.Decimal
	MarkPrice     decimal.Decimal
	LiqPrice      decimal.Decimal
	UnrealisedPnl decimal.Decimal
	// CumRealisedPnl is the realised PnL since the position was first
	// opened (across open/close cycles).
	CumRealisedPnl decimal.Decimal
	Leverage       decimal.Decimal
	// TakeProfit and StopLoss are zero when not set.
	TakeProfit decimal.Decimal
	StopLoss   decimal.Decimal
	// PositionValue is Size times AvgPrice.
	PositionValue decimal.Decimal
	// PositionIdx is 0 in one-way mode (1 and 2 are hedge mode).
	PositionIdx int
	CreatedTime time.Time
	UpdatedTime time.Time
}

// Order is one order as the exchange reports it (Bybit GET
// /v5/order/realtime and /v5/order/history). OrderLinkID and RejectReason
// are untrusted exchange text.
type Order struct {
	Category Category
	Symbol   string
	OrderID  string
	// OrderLinkID is the client order id (ours are "gx-..."); untrusted.
	OrderLinkID string
	// Side is "Buy" or "Sell".
	Side string
	// OrderType is "Limit" or "Market".
	OrderType string
	// TimeInForce is "GTC", "IOC", "FOK", "PostOnly" or "RPI".
	TimeInForce string
	// Price is the limit price (the protection price for market orders).
	Price decimal.Decimal
	Qty   decimal.Decimal
	// AvgPrice is zero when nothing was filled.
	AvgPrice     decimal.Decimal
	CumExecQty   decimal.Decimal
	CumExecValue decimal.Decimal
	LeavesQty    decimal.Decimal
	// Status is the exchange's orderStatus: "New", "PartiallyFilled",
	// "Untriggered", "Filled", "Cancelled", "PartiallyFilledCanceled",
	// "Rejected", "Deactivated", ...
	Status string
	// RejectReason is "EC_NoError" or the exchange's reason; untrusted.
	RejectReason string
	ReduceOnly   bool
	// CloseOnTrigger marks an order that closes a position when it is
	// triggered (Bybit's TP/SL orders carry it).
	CloseOnTrigger bool
	// StopOrderType is "" (or "UNKNOWN") for a plain order, else the kind
	// of conditional order: "TakeProfit", "StopLoss", "TrailingStop",
	// "Stop", "PartialTakeProfit", "PartialStopLoss", "tpslOrder", ...
	StopOrderType string
	// TriggerPrice is the price that triggers a conditional order; zero
	// for a plain one.
	TriggerPrice decimal.Decimal
	CreatedTime  time.Time
	UpdatedTime  time.Time
}

// Execution is one fill or other execution (Bybit GET /v5/execution/list).
// Linear accounts also see ExecType "Funding" rows.
type Execution struct {
	Category Category
	Symbol   string
	ExecID   string
	OrderID  string
	// OrderLinkID is the client order id of the order; untrusted.
	OrderLinkID string
	// Side is "Buy" or "Sell".
	Side      string
	ExecPrice decimal.Decimal
	ExecQty   decimal.Decimal
	ExecValue decimal.Decimal
	// ExecFee is in FeeCurrency; negative means a rebate.
	ExecFee decimal.Decimal
	FeeRate decimal.Decimal
	// FeeCurrency is the coin of ExecFee ("" when the exchange omits it;
	// linear fees are in the settle coin).
	FeeCurrency string
	IsMaker     bool
	// ExecType is "Trade", "Funding", "AdlTrade", "BustTrade", ...
	ExecType string
	ExecTime time.Time
}

// Page is one page of a list read. NextCursor, when not empty, is passed
// back unchanged as the cursor of the next read with the same filters; an
// empty NextCursor means there is nothing more. A non-empty NextCursor may
// still lead to an empty page (the exchange does not always know).
// NextCursor is opaque exchange text.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// MaxHistoryWindow is the longest [start, end] span of order history and
// executions (docs/bybit.md "Trade endpoints"): Bybit refuses longer windows. The MCP
// argument rules and the venue client both use this one value.
const MaxHistoryWindow = 7 * 24 * time.Hour
