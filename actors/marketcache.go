package actors

import (
	"context"
	"fmt"
	"sync"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// A place_order decision's market from caches the public stream keeps
// fresh (docs/decisions.md D148): the instrument rules and the quote from
// the process's venue.MarketFeed (public stream, bounded by a REST
// anchor). Whatever is not fresh is read by REST, at once, as readMarket
// does, and the symbol's position always is (D162).

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
func readMarketCached(c context.Context, r marketReader, feed *venue.MarketFeed, cat messages.Category, symbol string,
	needTicker bool) (risk.Market, error) {
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
		// Always by REST: a withheld push would keep a cached position
		// that a trade or leverage change outside the server has made
		// untrue (D162).
		wg.Go(func() {
			defer recoverRead(&errs[2])
			page, err := r.Positions(c, venue.PositionQuery{Category: messages.CategoryLinear, Symbol: symbol})
			if errs[2] = err; err == nil {
				rows = page.Items
			}
		})
	}
	func() {
		defer recoverRead(&errs[0])
		out.Instrument, errs[0] = feed.Instrument(c, cat, symbol)
	}()
	wg.Wait()
	return joinedMarket(out, errs[:], cat, symbol, rows)
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
