package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// StreamFactory opens the private stream for one key on this process's
// venue. Nil in Config: no stream (an unknown outcome is read back by
// REST without waiting for a push first, and nothing triggers a
// reconcile after a reconnect).
type StreamFactory func(apiKey, apiSecret string) (*venue.Stream, error)

// DefaultSettleWait is how long an unknown outcome waits for its client
// order id on the private stream before reading it back by REST. A
// matching push ends the wait early; it never settles the outcome itself
// (D183).
const DefaultSettleWait = 3 * time.Second

// orderWriter is what the venue actor needs of a session to write.
// *venue.Client implements it.
type orderWriter interface {
	CreateOrder(ctx context.Context, r messages.CreateOrderRequest) (*messages.OrderAck, error)
	AmendOrder(ctx context.Context, r messages.AmendOrderRequest) (*messages.OrderAck, error)
	CancelOrder(ctx context.Context, r messages.CancelOrderRequest) (*messages.OrderAck, error)
	SetLeverage(ctx context.Context, r messages.SetLeverageRequest) (*messages.WriteAck, error)
	SetTradingStop(ctx context.Context, r messages.TradingStopRequest) (*messages.WriteAck, error)
}

var _ orderWriter = (*venue.Client)(nil)

// orderWrite asks the venue actor to send one write of an action whose
// order_attempt is already durable. Exactly one request field is set. Its
// outcome goes back to the user actor as *orderWritten. Only the user
// actor's action path sends it (TestOnlyTheActionPathWrites).
type orderWrite struct {
	action uint64
	// linkID names the order to settle on an unknown outcome (the client
	// order id of a create, the order of an amend or cancel); empty for
	// position writes, which have no client id.
	linkID string
	// expect is what an order found for linkID must match to settle the
	// write (nil when linkID is empty).
	expect   *messages.OrderExpectation
	category messages.Category
	symbol   string

	create   *messages.CreateOrderRequest
	amend    *messages.AmendOrderRequest
	cancel   *messages.CancelOrderRequest
	leverage *messages.SetLeverageRequest
	stop     *messages.TradingStopRequest
}

// orderWritten is the outcome of an orderWrite.
type orderWritten struct {
	action   uint64
	ack      *messages.OrderAck // order writes that the venue accepted
	writeAck *messages.WriteAck // position writes that the venue accepted
	// settled is set when the write's outcome was unknown and REST then
	// found the order (result source "reconnaissance"; never a push,
	// D183).
	settled *venue.Settlement
	// readBack is an accepted create's order as read back at once (nil
	// when it could not be read: its filled qty is then unknown).
	readBack *messages.Order
	// position is a set-leverage's position as read back after the write
	// (nil when it could not be read); positionShows says it shows the
	// requested leverage, which settles an unknown outcome.
	position      *messages.Position
	positionShows bool
	// class is empty on success, else how the write failed.
	class venue.WriteClass
	err   *messages.Error
	// mismatches are the orders the venue showed for the write that did
	// not match it (they settled nothing); the user actor journals them
	// as venue_anomaly.
	mismatches []venue.Mismatch
	// reused is the order the venue showed for the write under an order
	// id the server knows under another client order id: it was not
	// applied (nil when none; orderids.go).
	reused *orderIDsReused
}

// streamEvent is one event of the venue actor's stream, as drained from
// its inbox (streaminbox.go); gen drops the events of a stream that was
// replaced.
type streamEvent struct {
	gen uint64
	ev  messages.StreamEvent
}

// streamResync tells the user actor that the stream (re)connected or lost
// updates: it reconciles its open attempts by REST before new writes.
// dropped counts the updates a gap lost and dropReason says why
// (journaled as stream_dropped).
type streamResync struct {
	reason     string
	dropped    int
	dropReason string
}

// openStream replaces the user's private stream with one for the current
// session's key. Its pump puts the events into the stream's inbox
// (streaminbox.go), which signals this actor with *streamReady.
func (v *venueActor) openStream(ctx actor.Context) {
	v.closeStream()
	if v.session == nil || v.streams == nil {
		return
	}
	s := v.snap.load()
	c, ok := s.CredentialFor(v.env)
	if !ok {
		return
	}
	apiKey, secret, err := openCredential(v.masterKey, s.User, c)
	if err != nil {
		return
	}
	st, serr := v.streams(apiKey, secret)
	if serr != nil {
		v.logger.Warn("private stream not started", "user", s.User, "code", string(messages.CodeOf(serr)))
		return
	}
	v.streamGen++
	v.stream = st
	if v.cache != nil {
		v.cache.opened(v.now(), st)
		if client, ok := v.session.(*venue.Client); ok {
			v.cache.setListing(listingOf(client))
		}
	}
	gen, self, root, logger := v.streamGen, ctx.Self(), ctx.ActorSystem().Root, v.logger
	var inbox *streamInbox
	inbox = newStreamInbox(func() { root.Send(self, &streamReady{gen: gen, inbox: inbox}) })
	if v.updates == nil {
		v.updates = newVenueUpdateBuffer()
	}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				logger.Error("stream pump panic", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		for ev := range st.Events() {
			inbox.put(ev)
		}
	}()
}

// onStreamReady drains the stream's inbox and acts on each event.
func (v *venueActor) onStreamReady(ctx actor.Context, m *streamReady) {
	if m.gen != v.streamGen {
		return
	}
	for _, ev := range m.inbox.drain() {
		v.onStreamEvent(ctx, &streamEvent{gen: m.gen, ev: ev})
	}
}

// closeStream stops the stream; its pump ends when the events close.
func (v *venueActor) closeStream() {
	if v.stream != nil {
		_ = v.stream.Close()
		v.stream = nil
	}
	if v.cache != nil {
		v.cache.closed()
	}
}

// onStreamEvent hands the user actor what it must act on: a (re)connect or
// a gap (reconcile by REST), and order rows (journal venue_update, through
// the user's venueUpdateBuffer: one signal in its mailbox at a time).
// Executions, positions and wallet pushes are not journaled.
func (v *venueActor) onStreamEvent(ctx actor.Context, m *streamEvent) {
	if m.gen != v.streamGen {
		return
	}
	if m.ev.Kind == messages.StreamOrders {
		// A row under a known order id and another client order id is
		// not applied anywhere: cache, watches, venue_update.
		var reused []reusedOrder
		m.ev.Orders, reused = v.ids.admitOrders(m.ev.Orders)
		if len(reused) > 0 {
			ctx.Send(ctx.Parent(), &orderIDsReused{source: messages.AnomalySourceStream, orders: reused})
		}
	}
	if v.cache != nil {
		v.cache.note(m.ev, v.now())
	}
	v.notifyWatches(m.ev)
	switch m.ev.Kind {
	case messages.StreamConnected, messages.StreamReconnected, messages.StreamGap:
		v.seedCache(ctx)
		ctx.Send(ctx.Parent(), &streamResync{reason: string(m.ev.Kind), dropped: m.ev.Dropped, dropReason: m.ev.Reason})
	case messages.StreamOrders:
		if len(m.ev.Orders) > 0 && v.updates.add(m.ev.At, m.ev.Orders) {
			ctx.Send(ctx.Parent(), &streamOrdersReady{buf: v.updates})
		}
	}
}

// write sends one write, off the mailbox. The write is bounded by the
// request timeout and never by the caller's context: once its attempt is
// durable, a caller that goes away must not turn it into an unknown
// outcome. An unknown outcome is settled (stream, then REST); it is never
// resent.
func (v *venueActor) write(ctx actor.Context, m *orderWrite) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	w, ok := v.session.(orderWriter)
	if v.session == nil || !ok {
		err := v.noSessionError()
		ctx.Send(userPID, &orderWritten{action: m.action, class: venue.WriteNotSent, err: err})
		return
	}
	client, _ := v.session.(*venue.Client)
	var waiter venue.OrderWaiter
	if v.stream != nil {
		waiter = v.stream
	}
	if m.create != nil {
		// A pushed row of this order is the server's own (venue_update).
		if v.updates == nil {
			v.updates = newVenueUpdateBuffer()
		}
		v.updates.sent(m.create.OrderLinkID)
	}
	timeout, wait, cache, ids, feed, fence := v.timeout, v.settleWait, v.cache, v.ids, v.feed, v.fence
	sent := v.sends.begin()
	offMailbox(ctx, v.logger, nil, stepBounds{request: timeout, settle: wait}.venueWrite(), userPID, func(c context.Context) any {
		defer sent()
		out := &orderWritten{action: m.action}
		wc, cancel := context.WithTimeout(c, timeout)
		if fence != nil {
			// Checked as the request leaves (D198): once this member may
			// have lost the shard, nothing more is sent for it.
			wc = venue.WithSendGuard(wc, func() *messages.Error {
				if fence() {
					return nil
				}
				return messages.ShardFenced(errors.New("venue write after the shard's lock was lost"))
			})
		}
		var err error
		switch {
		case m.create != nil:
			out.ack, err = w.CreateOrder(wc, *m.create)
		case m.amend != nil:
			out.ack, err = w.AmendOrder(wc, *m.amend)
		case m.cancel != nil:
			out.ack, err = w.CancelOrder(wc, *m.cancel)
		case m.leverage != nil:
			out.writeAck, err = w.SetLeverage(wc, *m.leverage)
		case m.stop != nil:
			out.writeAck, err = w.SetTradingStop(wc, *m.stop)
		default:
			err = messages.Internal(errors.New("venue actor: an order write without a request"))
		}
		cancel()
		if feed != nil && (m.create != nil || m.amend != nil) && instrumentRuleRefusal(err) {
			// The venue refused a rule the cached rules did not have:
			// the next decision reads them again (D148).
			feed.InstrumentRefused(m.category, m.symbol)
		}
		if (m.leverage != nil || m.stop != nil) && client != nil {
			// No client order id: the position says what happened.
			rc, rcancel := context.WithTimeout(c, timeout)
			page, perr := client.Positions(rc, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: m.symbol})
			rcancel()
			if perr == nil {
				out.position = symbolRow(page.Items, m.symbol)
				out.positionShows = out.position != nil
				for i := range page.Items {
					if page.Items[i].Symbol == m.symbol && !positionShows(&page.Items[i], m) {
						out.positionShows = false // every row must show it
					}
				}
			}
			if err != nil && venue.ClassifyWrite(err) == venue.WriteUnknown {
				out.class, out.err = venue.WriteUnknown, messages.AsError(err)
				recon := "failed"
				if perr == nil {
					recon = "not_found"
				}
				d := map[string]any{"reconnaissance": recon}
				for k, v := range out.err.Details {
					if k != "reconnaissance" {
						d[k] = v
					}
				}
				out.err.Details = d
				out.err.NextStep = "do not resend blindly; read get_positions (setting it again is safe: the values are absolute)"
				return out
			}
		}
		if m.create != nil && cache != nil && (err == nil || venue.ClassifyWrite(err) == venue.WriteUnknown) {
			// An order this server placed (or may have): its realised
			// PnL counts in the day's loss.
			cache.markTraded(m.category, m.symbol)
		}
		if err == nil {
			if m.create != nil && out.ack != nil {
				if r := ids.refused(messages.AnomalySourceREST, m.category, m.symbol, out.ack.OrderID, m.create.OrderLinkID); r != nil {
					// The venue names the new order by an order id that
					// belongs to another: nothing is settled by it.
					out.ack, out.reused = nil, r
					out.class, out.err = venue.WriteUnknown, reusedOrderIDError(m.create.OrderLinkID)
					return out
				}
			}
			if (m.create != nil || m.cancel != nil || m.amend != nil) && client != nil && m.linkID != "" && m.expect != nil {
				// Read back by REST, never answered from a push: a push
				// that matches the order may still say a fill or status
				// the venue never gave (D161).
				rc, rcancel := context.WithTimeout(c, timeout)
				out.readBack, _, _ = client.OrderByLinkID(rc, m.category, m.symbol, m.linkID)
				rcancel()
				var restMismatches []venue.Mismatch
				out.readBack, restMismatches = checkReadBack(out.readBack, *m.expect, out.ack)
				out.mismatches = restMismatches
				if o := out.readBack; o != nil && len(restMismatches) == 0 {
					if out.reused = ids.refused(messages.AnomalySourceREST, o.Category, o.Symbol, o.OrderID, o.OrderLinkID); out.reused != nil {
						out.readBack = nil // as if it could not be read
					}
				}
			}
			return out
		}
		out.class, out.err = venue.ClassifyWrite(err), messages.AsError(err)
		if out.class != venue.WriteUnknown || m.linkID == "" || m.expect == nil || client == nil {
			return out
		}
		s, mismatches, serr := venue.Settle(c, client, waiter, *m.expect, wait)
		out.mismatches = mismatches
		if serr != nil {
			out.err = messages.AsError(serr)
			return out
		}
		// Settled by REST only: a push never settles an outcome (D183).
		if out.reused = ids.refused(messages.AnomalySourceREST, s.Order.Category, s.Order.Symbol, s.Order.OrderID, s.Order.OrderLinkID); out.reused != nil {
			out.err = reusedOrderIDError(m.linkID)
			return out
		}
		out.settled = s
		return out
	}, func(err *messages.Error) any {
		return &orderWritten{action: m.action, class: venue.WriteUnknown, err: err}
	})
}

// checkReadBack checks an accepted write's read-back against the write
// (and, for a create, the order id of the venue's answer): every field
// that disagrees is named, not only the first. A read-back that names
// another order (another order id, or another client order id) is kept,
// for the answer to refuse it as such (order_id_mismatch, never a silent
// swap of ids), and so is one whose only mismatch is a status that is not
// one of Bybit's: the answer shows that text only fenced, as untrusted
// text, and its filled quantity as unknown (venue.FilledOf). A read-back
// of this order with any other mismatch (a larger quantity or filled
// quantity, another side, category or symbol, prices outside the band,
// whatever its status) is dropped, as if it could not be read: neither
// its status nor its filled quantity reaches the answer.
func checkReadBack(o *messages.Order, expect messages.OrderExpectation, ack *messages.OrderAck) (*messages.Order, []venue.Mismatch) {
	if o == nil {
		return nil, nil
	}
	if ack != nil && ack.OrderID != "" && expect.OrderID == "" {
		expect.OrderID = ack.OrderID
	}
	fields := expect.Mismatches(o)
	if len(fields) == 0 {
		return o, nil
	}
	mismatches := make([]venue.Mismatch, 0, len(fields))
	for _, f := range fields {
		mismatches = append(mismatches, venue.Mismatch{Source: messages.AnomalySourceREST, Field: f})
	}
	otherOrder := (o.OrderLinkID != "" && o.OrderLinkID != expect.ClientOrderID) || (expect.OrderID != "" && o.OrderID != expect.OrderID)
	onlyStatusText := len(fields) == 1 && fields[0] == "order_status"
	if otherOrder || onlyStatusText {
		return o, mismatches
	}
	return nil, mismatches
}

// marketFetch asks the venue actor for what a place_order decision needs:
// the instrument's rules, the ticker and the price band. Its outcome goes
// back to the user actor as *marketFetched.
type marketFetch struct {
	action   uint64
	category messages.Category
	symbol   string
	// cached: the decision may take its market from the feed and the
	// stream cache (marketcache.go); needTicker: it reads the ticker.
	cached, needTicker bool
}

// marketFetched is the outcome of a marketFetch.
type marketFetched struct {
	action uint64
	market risk.Market
	err    *messages.Error
}

// marketReader is what the venue actor needs of a session to read the
// market. *venue.Client implements it.
type marketReader interface {
	Instrument(ctx context.Context, cat messages.Category, symbol string) (*messages.Instrument, error)
	Ticker(ctx context.Context, cat messages.Category, symbol string) (*messages.Ticker, error)
	PriceLimit(ctx context.Context, cat messages.Category, symbol string) (*messages.PriceLimit, error)
	Positions(ctx context.Context, q venue.PositionQuery) (messages.Page[messages.Position], error)
}

var _ marketReader = (*venue.Client)(nil)

// fetchMarket reads the market for a decision, off the mailbox.
func (v *venueActor) fetchMarket(ctx actor.Context, m *marketFetch) {
	userPID := ctx.Sender()
	if userPID == nil {
		return
	}
	r, ok := v.session.(marketReader)
	if v.session == nil || !ok {
		err := v.noSessionError()
		ctx.Send(userPID, &marketFetched{action: m.action, err: err})
		return
	}
	cache, feed := v.cache, v.feed
	offMailbox(ctx, v.logger, nil, v.timeout, userPID, func(c context.Context) any {
		var mk risk.Market
		var err error
		if m.cached && feed != nil {
			mk, err = readMarketCached(c, r, feed, m.category, m.symbol, m.needTicker)
		} else {
			mk, err = readMarket(c, r, m.category, m.symbol)
		}
		if err == nil && cache != nil {
			cache.markListed(m.category, m.symbol) // the venue showed its rules
		}
		return &marketFetched{action: m.action, market: mk, err: messages.AsError(err)}
	}, func(err *messages.Error) any { return &marketFetched{action: m.action, err: err} })
}

// positionShows reports whether a position shows what a position write
// asked for: the leverage, or every TP/SL level it set.
func positionShows(p *messages.Position, m *orderWrite) bool {
	if m.leverage != nil {
		return p.Leverage.Equal(m.leverage.Leverage)
	}
	if m.stop != nil {
		return (!m.stop.TakeProfit.Valid || p.TakeProfit.Equal(m.stop.TakeProfit.Decimal)) &&
			(!m.stop.StopLoss.Valid || p.StopLoss.Equal(m.stop.StopLoss.Decimal))
	}
	return false
}

// symbolRow is the row of symbol in rows that a decision reads (nil when
// none): one-way mode shows one row per symbol; of several (a venue that
// shows more), a row with a position open, else the one with the highest
// leverage, so the leverage step (D111) is never taken under an open
// position nor skipped at a leverage the venue also shows higher.
func symbolRow(rows []messages.Position, symbol string) *messages.Position {
	var out *messages.Position
	for i := range rows {
		p := rows[i]
		if p.Symbol != symbol {
			continue
		}
		if out == nil || out.Size.IsZero() && (!p.Size.IsZero() || p.Leverage.GreaterThan(out.Leverage)) {
			out = &p
		}
	}
	return out
}

// readMarket reads what a decision needs: the instrument's rules, the
// ticker, the price band and, on linear, the symbol's position. The reads
// are independent, so they run at once (one round trip of waiting, not
// four); the first failure in that order is the answer, as if they had run
// one after the other.
func readMarket(c context.Context, r marketReader, cat messages.Category, symbol string) (risk.Market, error) {
	var out risk.Market
	var errs [4]error
	var pos messages.Page[messages.Position]
	reads := []func() error{
		func() (err error) { out.Instrument, err = r.Instrument(c, cat, symbol); return err },
		func() (err error) { out.Ticker, err = r.Ticker(c, cat, symbol); return err },
		func() (err error) { out.Band, err = r.PriceLimit(c, cat, symbol); return err },
	}
	if cat == messages.CategoryLinear {
		reads = append(reads, func() (err error) {
			pos, err = r.Positions(c, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: symbol})
			return err
		})
	}
	// sync.WaitGroup.Go rather than errgroup: errgroup's Wait answers the
	// error that came first in time, and this answer must not depend on
	// timing; nor does errgroup turn a read's panic into an error.
	var wg sync.WaitGroup
	for i, read := range reads[1:] {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil { // as offMailbox does for the first
					errs[i+1] = fmt.Errorf("market read panicked: %v", p)
				}
			}()
			errs[i+1] = read()
		})
	}
	errs[0] = reads[0]()
	wg.Wait()
	return joinedMarket(out, errs[:], cat, symbol, pos.Items)
}

// joinedMarket is a decision's market once its reads have joined: the
// first failure in the reads' order, else out with the linear symbol's
// position row taken from rows.
func joinedMarket(out risk.Market, errs []error, cat messages.Category, symbol string, rows []messages.Position) (risk.Market, error) {
	for _, err := range errs {
		if err != nil {
			return risk.Market{}, err
		}
	}
	if cat == messages.CategoryLinear {
		out.PositionRead = true
		out.Position = symbolRow(rows, symbol)
	}
	return out, nil
}
