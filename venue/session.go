package venue

import (
	"context"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Session is one user's signed conversation with the venue, as the user's
// venue actor owns it: today the signed REST calls; the private stream and
// order placement join it with the trading path. *Client implements it.
// Implementations must be safe for concurrent use: the venue actor runs
// each call on its own goroutine.
type Session interface {
	// QueryAPIKey asks what the session's key may do (/v5/user/query-api).
	QueryAPIKey(ctx context.Context) (*messages.APIKeyInfo, error)
	WalletBalance(ctx context.Context) (*messages.WalletBalance, error)
	Positions(ctx context.Context, q PositionQuery) (messages.Page[messages.Position], error)
	OpenOrders(ctx context.Context, q OrderQuery) (messages.Page[messages.Order], error)
	OrderHistory(ctx context.Context, q HistoryQuery) (messages.Page[messages.Order], error)
	Executions(ctx context.Context, q HistoryQuery) (messages.Page[messages.Execution], error)
}

var _ Session = (*Client)(nil)
