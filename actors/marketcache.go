package actors

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// A place_order decision's market from caches the streams keep fresh
// (docs/decisions.md D148, D149): the instrument rules and the quote from
// the process's venue.MarketFeed (public stream, bounded by a REST
// anchor), the symbol's position from the user's stream cache (a REST
// read of the symbol that no push has contradicted since). Whatever is
// not fresh is read by REST, at once, as readMarket does.

// DefaultPositionAnchorAge bounds how old a position read may be when a
// decision uses it again (D149).
const DefaultPositionAnchorAge = 5 * time.Second

// maxPositionAnchors bounds the symbols with a position anchor.
const maxPositionAnchors = 256

// positionAnchor is a symbol's positions as a decision read them by REST.
type positionAnchor struct {
	rows []messages.Position
	at   time.Time // when the read started
	gen  uint64    // the stream's connGen when the read started
	// spoiled: a push since showed the symbol otherwise (another size,
	// side or leverage, a row the read did not have, a fill of an
	// order): the next decision reads REST.
	spoiled bool
}

// noteForAnchorsLocked applies a stream event to the position anchors: a
// connection event or a gap makes every anchor unusable (connGen); a
// pushed position row that differs from its anchor, or a pushed order
// with a fill, spoils the symbol's anchor. A push can only make the next
// decision read REST, never keep a row a REST read did not show.
func (c *streamCache) noteForAnchorsLocked(ev messages.StreamEvent) {
	switch ev.Kind {
	case messages.StreamConnected, messages.StreamReconnected, messages.StreamDisconnected, messages.StreamGap:
		c.connGen++
	case messages.StreamPositions:
		for i := range ev.Positions {
			p := &ev.Positions[i]
			a := c.posAnchors[symKey(p.Category, p.Symbol)]
			if a == nil || a.spoiled {
				continue
			}
			same := false
			for _, r := range a.rows {
				if r.PositionIdx == p.PositionIdx && r.Side == p.Side && r.Size.Equal(p.Size) && r.Leverage.Equal(p.Leverage) {
					same = true
				}
			}
			a.spoiled = !same
		}
	case messages.StreamOrders:
		for i := range ev.Orders {
			o := &ev.Orders[i]
			if a := c.posAnchors[symKey(o.Category, o.Symbol)]; a != nil && !o.CumExecQty.IsZero() {
				a.spoiled = true
			}
		}
	}
}

// anchorGen is the generation a position read starting now is taken in.
func (c *streamCache) anchorGen() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connGen
}

// anchorPositions keeps a REST read of the symbol's positions (started
// at, in generation gen) for the next decisions.
func (c *streamCache) anchorPositions(cat messages.Category, symbol string, rows []messages.Position, at time.Time, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.posAnchors == nil {
		c.posAnchors = map[string]*positionAnchor{}
	}
	k := symKey(cat, symbol)
	if _, ok := c.posAnchors[k]; !ok && len(c.posAnchors) >= maxPositionAnchors {
		clear(c.posAnchors)
	}
	c.posAnchors[k] = &positionAnchor{rows: append([]messages.Position(nil), rows...), at: at, gen: gen}
}

// dropPositions forgets the symbol's anchor (a position write was sent).
func (c *streamCache) dropPositions(cat messages.Category, symbol string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.posAnchors, symKey(cat, symbol))
}

// anchoredPositions is the symbol's positions a decision may use without
// reading REST: the stream open, connected and not flapping, the read
// made on the current connection without a gap since, no push since that
// showed the symbol otherwise, and no older than maxAge.
func (c *streamCache) anchoredPositions(cat messages.Category, symbol string, now time.Time, maxAge time.Duration) ([]messages.Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.posAnchors[symKey(cat, symbol)]
	if a == nil || a.spoiled || a.gen != c.connGen || !c.open || !c.connected || c.flappingLocked(now) || now.Sub(a.at) > maxAge || now.Before(a.at) {
		return nil, false
	}
	return a.rows, true
}

// marketUse says how a decision reads the market: cached for place_order
// (the only tool whose market reads the feed serves); needTicker unless
// it is a Limit buy, whose decision reads no ticker (a Market order
// prices from the best ask or bid, a sell is valued at the best bid).
func marketUse(tool string, args any) (cached, needTicker bool) {
	a, ok := args.(messages.PlaceOrderArgs)
	if tool != risk.ToolPlaceOrder || !ok {
		return false, true
	}
	return true, !(a.OrderType == "Limit" && a.Side == "Buy")
}

// marketFetchFor is the market read of a call of tool.
func marketFetchFor(action uint64, tool string, b risk.CallBase, args any) *marketFetch {
	cached, ticker := marketUse(tool, args)
	return &marketFetch{action: action, category: b.Category, symbol: b.Symbol, cached: cached, needTicker: ticker}
}

// readMarketCached is readMarket served from the feed and the stream
// cache where they are fresh; the reads that remain run at once, and the
// first failure in readMarket's order (instrument, ticker and band,
// position) is the answer. stats counts what went to REST (nil: none).
func readMarketCached(c context.Context, r marketReader, feed *venue.MarketFeed, cache *streamCache, cat messages.Category, symbol string,
	needTicker bool, now func() time.Time) (risk.Market, error) {
	var out risk.Market
	var errs [3]error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer recoverRead(&errs[1])
		var src venue.QuoteSource
		out.Ticker, out.Band, src, errs[1] = feed.Quote(c, cat, symbol, needTicker)
		_ = src
	})
	var rows []messages.Position
	if cat == messages.CategoryLinear {
		var ok bool
		if cache != nil {
			rows, ok = cache.anchoredPositions(cat, symbol, now(), DefaultPositionAnchorAge)
		}
		if !ok {
			wg.Go(func() {
				defer recoverRead(&errs[2])
				var gen uint64
				if cache != nil {
					gen = cache.anchorGen()
				}
				at := now()
				page, err := r.Positions(c, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: symbol})
				if errs[2] = err; err == nil {
					rows = page.Items
					if cache != nil && page.NextCursor == "" {
						cache.anchorPositions(cat, symbol, rows, at, gen)
					}
				}
			})
		}
	}
	func() {
		defer recoverRead(&errs[0])
		out.Instrument, errs[0] = feed.Instrument(c, cat, symbol)
	}()
	wg.Wait()
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

// recoverRead turns a read's panic into its error (as offMailbox does).
func recoverRead(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("market read panicked: %v", p)
	}
}

// instrumentRuleRetCodes are the venue's refusals of an order for a rule
// of the instrument (qty step and bounds, tick, minimum value, status,
// price limits; docs/simulator.md "Validation codes"): the cached rules may be
// out of date, so they are read again at the next decision (D148).
var instrumentRuleRetCodes = map[int]bool{
	10001: true, 110003: true, 110017: true, 110066: true, 110074: true, 110094: true, 110120: true, 110121: true,
	170124: true, 170132: true, 170133: true, 170134: true, 170135: true, 170136: true, 170137: true, 170140: true,
	170148: true, 170151: true, 170157: true, 170192: true, 170193: true, 170194: true, 170197: true, 170198: true,
	170199: true, 170200: true, 170341: true, 170371: true, 170372: true, 170381: true, 170382: true,
}

// instrumentRuleRefusal reports whether a write's error is a refusal for
// an instrument rule.
func instrumentRuleRefusal(err error) bool {
	if err == nil {
		return false
	}
	code, ok := messages.AsError(err).Details["ret_code"].(int)
	return ok && instrumentRuleRetCodes[code]
}

// streamUp reports whether the private stream is open, connected and
// not flapping.
func (c *streamCache) streamUp() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open && c.connected && !c.flappingLocked(time.Now())
}

// streamAnswer waits up to wait for an accepted create's order on the
// private stream: a push that matches the create's expectation (its
// client order id, the order id the venue answered, category, symbol,
// side, at most its qty, a price inside the band) with a status whose
// filled qty is known. Pushes of the id that do not match are named
// (rejected, journaled as anomalies) and settle nothing; a matching push
// whose filled qty is not known ("Created", a status that is not one of
// Bybit's) is not an answer either: the order is read back by REST.
func streamAnswer(ctx context.Context, w venue.OrderWaiter, expect messages.OrderExpectation, ack *messages.OrderAck, wait time.Duration) (*messages.Order, []venue.Mismatch, bool) {
	if ack == nil || ack.OrderID == "" {
		return nil, nil, false
	}
	if expect.OrderID == "" {
		expect.OrderID = ack.OrderID
	}
	o, ok, fields := w.WaitMatchingOrder(ctx, &expect, wait)
	var rejected []venue.Mismatch
	for _, f := range fields {
		rejected = append(rejected, venue.Mismatch{Source: messages.AnomalySourceStream, Field: f})
	}
	if !ok || !venue.FilledOf(&o).Known {
		return nil, rejected, false
	}
	return &o, rejected, true
}
