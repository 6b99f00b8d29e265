package actors

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// wait_for_update: a caller registers a watch with the user's venue actor,
// which owns the private stream; the first push that matches it is sent
// on the watch's channel and the watch is dropped. The caller waits on its
// own goroutine (never in a mailbox) and drops the watch when it stops
// waiting.

// watchAsk registers one watch. The venue actor answers its sender with
// *watchAck, or a *messages.Error when there is no private stream.
type watchAsk struct {
	id      uint64
	orderID string
	symbol  string
	ch      chan<- *messages.UpdateAnswer
}

// watchAck: the watch is registered.
type watchAck struct{}

// unwatch drops a watch (the caller stopped waiting).
type unwatch struct{ id uint64 }

var watchIDs atomic.Uint64

// maxWatches bounds the watches of one venue actor (one user).
const maxWatches = 64

// onWatch registers a watch.
func (v *venueActor) onWatch(ctx actor.Context, m *watchAsk) {
	if ctx.Sender() == nil {
		return
	}
	if v.stream == nil {
		e := v.keyErr
		if e == nil && v.session == nil {
			e = state.NoKeyError()
		}
		if e == nil {
			e = &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the private stream is not running here, so changes cannot be watched",
				NextStep: "read get_open_orders or get_positions instead"}
		}
		ctx.Respond(e)
		return
	}
	if v.watches == nil {
		v.watches = map[uint64]*watchAsk{}
	}
	if len(v.watches) >= maxWatches {
		ctx.Respond(&messages.Error{Code: messages.CodeRateLimited, Message: "too many wait_for_update calls are waiting for this user",
			NextStep: "wait for one to answer before starting another", RetryAfterS: 1, Details: map[string]any{"limit": maxWatches}})
		return
	}
	v.watches[m.id] = m
	ctx.Respond(&watchAck{})
}

// notifyWatches hands a stream event to the watches it matches. A
// reconnect, a gap or a lost connection ends every watch with Interrupted
// set: a change may have been missed.
func (v *venueActor) notifyWatches(ev messages.StreamEvent) {
	if len(v.watches) == 0 {
		return
	}
	for id, w := range v.watches {
		var ans *messages.UpdateAnswer
		switch ev.Kind {
		case messages.StreamReconnected, messages.StreamGap, messages.StreamDisconnected:
			ans = &messages.UpdateAnswer{Interrupted: true}
		case messages.StreamOrders:
			var rows []messages.Order
			for _, o := range ev.Orders {
				if (w.orderID == "" || o.OrderID == w.orderID) && (w.symbol == "" || o.Symbol == w.symbol) {
					rows = append(rows, o)
				}
			}
			if len(rows) > 0 {
				ans = &messages.UpdateAnswer{Changed: true, Orders: rows}
			}
		case messages.StreamPositions:
			if w.orderID != "" {
				continue
			}
			var rows []messages.Position
			for _, p := range ev.Positions {
				if p.Symbol == w.symbol {
					rows = append(rows, p)
				}
			}
			if len(rows) > 0 {
				ans = &messages.UpdateAnswer{Changed: true, Positions: rows}
			}
		}
		if ans == nil {
			continue
		}
		select {
		case w.ch <- ans:
		default:
		}
		delete(v.watches, id)
	}
}

// WaitForUpdate waits, at most r.Timeout, for the user's private stream
// to show a change to the order r.OrderID or to the user's orders and
// positions on r.Symbol. It answers Changed false when the time passed
// first. It never waits on the exchange: the stream pushes.
func (s *System) WaitForUpdate(ctx context.Context, r *messages.WaitForUpdateRequest) (*messages.UpdateAnswer, error) {
	ch := make(chan *messages.UpdateAnswer, 1)
	id := watchIDs.Add(1)
	if _, err := s.askUser(ctx, r.User, &watchAsk{id: id, orderID: r.OrderID, symbol: r.Symbol, ch: ch}); err != nil {
		return nil, err
	}
	defer s.tellUser(r.User, &unwatch{id: id})
	t := time.NewTimer(r.Timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-t.C:
		return &messages.UpdateAnswer{}, nil
	case <-ctx.Done():
		return nil, messages.Internal(ctx.Err())
	}
}
