package actors

import (
	"context"
	"fmt"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// MarketSource is the venue's public endpoints, the one path for public
// market reads (decisions D131). The composition root serves it from a
// *venue.Client with instrument rules from a *venue.InstrumentCache.
//
// Implementations must be safe for concurrent use (each read runs on its
// caller's goroutine) and must honour the context's deadline.
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

// Ticker reads a ticker from the venue's public endpoints.
func (s *System) Ticker(ctx context.Context, req *messages.GetTickerRequest) (*messages.Ticker, error) {
	return publicRead(ctx, s, func(c context.Context) (*messages.Ticker, error) { return s.market.Ticker(c, req.Category, req.Symbol) })
}

// Orderbook reads a book from the venue's public endpoints.
func (s *System) Orderbook(ctx context.Context, req *messages.GetOrderbookRequest) (*messages.Orderbook, error) {
	return publicRead(ctx, s, func(c context.Context) (*messages.Orderbook, error) {
		return s.market.Orderbook(c, req.Category, req.Symbol, req.Limit)
	})
}

// Klines reads candles from the venue's public endpoints.
func (s *System) Klines(ctx context.Context, req *messages.GetKlinesRequest) ([]messages.Kline, error) {
	return publicRead(ctx, s, func(c context.Context) ([]messages.Kline, error) { return s.market.Klines(c, *req) })
}

// Instrument reads an instrument's rules, through the instrument cache.
func (s *System) Instrument(ctx context.Context, req *messages.GetInstrumentRequest) (*messages.Instrument, error) {
	return publicRead(ctx, s, func(c context.Context) (*messages.Instrument, error) {
		return s.market.Instrument(c, req.Category, req.Symbol)
	})
}

// publicRead runs one public read on the caller's goroutine, with no
// actor in between (they hold no state a public read needs): bounded by
// the caller's context and the request timeout, a panic in the source
// logged and answered internal_error, as for a call off a venue actor's
// mailbox (offMailbox).
func publicRead[T any](ctx context.Context, s *System, call func(context.Context) (T, error)) (res T, err error) {
	var zero T
	if s.market == nil {
		return zero, messages.Internal(fmt.Errorf("no market source in this process"))
	}
	if err := ctx.Err(); err != nil {
		return zero, messages.Internal(fmt.Errorf("market read: %w", err))
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = zero, venuePanic(s.logger, p)
		}
	}()
	c, cancel := venueTimeout(ctx, s.timeout)
	defer cancel()
	res, err = call(c)
	if err != nil {
		return zero, messages.AsError(err)
	}
	return res, nil
}
