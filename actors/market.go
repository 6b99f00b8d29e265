package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// MarketSource is what the market-data actor needs from a venue: the public
// endpoints. *venue.Client with a *venue.InstrumentCache satisfies it
// through VenueMarket.
//
// Implementations must be safe for concurrent use: the actor runs each
// request on its own goroutine so that no request blocks its mailbox.
type MarketSource interface {
	Ticker(ctx context.Context, cat messages.Category, symbol string) (*messages.Ticker, error)
	Orderbook(ctx context.Context, cat messages.Category, symbol string, limit int) (*messages.Orderbook, error)
	Klines(ctx context.Context, req messages.GetKlinesRequest) ([]messages.Kline, error)
	Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error)
}

// crashRequest makes an actor panic inside Receive. It is unexported, so only
// this package's tests can send it; it proves that supervision answers the
// crashing caller and restarts the actor.
type crashRequest struct{}

// marketActor is the one path from the server to the venue's public
// endpoints. Each request is served on its own goroutine with a deadline;
// the reply goes straight to the requester.
type marketActor struct {
	source  MarketSource
	timeout time.Duration
	logger  *slog.Logger
}

func (m *marketActor) Receive(ctx actor.Context) {
	switch req := ctx.Message().(type) {
	case *messages.GetTickerRequest:
		m.serve(ctx, func(c context.Context) any {
			t, err := m.source.Ticker(c, req.Category, req.Symbol)
			return &messages.GetTickerResponse{Ticker: t, Err: messages.AsError(err)}
		})
	case *messages.GetOrderbookRequest:
		m.serve(ctx, func(c context.Context) any {
			b, err := m.source.Orderbook(c, req.Category, req.Symbol, req.Limit)
			return &messages.GetOrderbookResponse{Book: b, Err: messages.AsError(err)}
		})
	case *messages.GetKlinesRequest:
		m.serve(ctx, func(c context.Context) any {
			k, err := m.source.Klines(c, *req)
			return &messages.GetKlinesResponse{Klines: k, Err: messages.AsError(err)}
		})
	case *messages.GetInstrumentRequest:
		m.serve(ctx, func(c context.Context) any {
			in, err := m.source.Instrument(c, req.Category, req.Symbol)
			return &messages.GetInstrumentResponse{Instrument: in, Err: messages.AsError(err)}
		})
	case *crashRequest:
		panic("market: crash requested by test")
	}
}

func (m *marketActor) serve(ctx actor.Context, call func(context.Context) any) {
	serveOffMailbox(ctx, m.logger, m.timeout, call)
}

// serveOffMailbox runs call on its own goroutine with a deadline and sends
// its result to the requester, so the actor's mailbox never waits on the
// network. A panic in call is answered with internal_error instead of
// killing the process. Without a requester there is nothing to do: these
// calls are reads.
func serveOffMailbox(ctx actor.Context, logger *slog.Logger, timeout time.Duration, call func(context.Context) any) {
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	root := ctx.ActorSystem().Root
	go func() {
		var res any
		defer func() {
			if p := recover(); p != nil {
				logger.Error("venue request panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				res = messages.Internal(fmt.Errorf("venue request panicked"))
			}
			root.Send(sender, res)
		}()
		c, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res = call(c)
	}()
}
