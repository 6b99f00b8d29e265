package sim

import (
	"net/http"

	"github.com/shopspring/decimal"
)

// Test endpoints that move the market and the clock (docs/simulator.md "Test endpoints").
//
//	POST /sim/price {"category": "linear", "symbol": "BTCUSDT", "price": "60000"}
//	     -> {"category","symbol","lastPrice","time"}
//	Moves the instrument's last price to price (rounded to its tick) from
//	the current second on; the spot and linear markets of the same coin
//	move together, and the walk goes on from the new level. Resting orders
//	and TP/SL the new price reaches fill or trigger at once.
//
//	POST /sim/clock {"advance_ms": 60000} -> {"time": ms}
//	Moves simulated time forward (it never goes back). Every second passed
//	is evaluated: resting orders and TP/SL the walk reaches on the way fill
//	or trigger at that second, and accepted changes due by then apply.

// maxAdvanceMs bounds one clock advance (a year).
const maxAdvanceMs = int64(365 * 24 * 3600 * 1000)

func (s *Sim) testSetPrice(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Category string `json:"category"`
		Symbol   string `json:"symbol"`
		Price    string `json:"price"`
	}
	if err := decodeStrict(r, &req); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	in := s.catalog.get(req.Category, req.Symbol)
	if in == nil {
		testAPIError(w, http.StatusBadRequest, "unknown category/symbol")
		return
	}
	price, err := decimal.NewFromString(req.Price)
	if err != nil || !price.IsPositive() {
		testAPIError(w, http.StatusBadRequest, "price must be a positive decimal string")
		return
	}
	price = roundToTick(price, in.tick)
	if !price.IsPositive() {
		price = in.tick
	}
	now := s.now()
	sec := floorDiv(now.UnixMilli(), 1000)
	s.mu.Lock()
	s.advanceLocked(now)
	prevs := map[*instrument]decimal.Decimal{}
	for _, cat := range []string{catSpot, catLinear} {
		for _, x := range s.catalog.list[cat] {
			if x.under == in.under {
				prevs[x] = s.model.last(x, sec)
			}
		}
	}
	s.model.moveTo(in, sec, price)
	// The second was evaluated at the old price; evaluate it again at the
	// new one so whatever the move reaches reacts now.
	s.evaluateLocked(sec, now.UnixMilli(), prevs)
	last := s.model.last(in, sec)
	s.unlockAndFlush()
	s.log.Debug("sim: price moved", "category", in.category, "symbol", in.symbol, "price", last.String())
	writePlainJSON(w, http.StatusOK, map[string]any{
		"category": in.category, "symbol": in.symbol,
		"lastPrice": fixed(last, in.priceScale), "time": now.UnixMilli(),
	})
}

func (s *Sim) testAdvanceClock(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AdvanceMs *int64 `json:"advance_ms"`
	}
	if err := decodeStrict(r, &req); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	if req.AdvanceMs == nil || *req.AdvanceMs < 0 || *req.AdvanceMs > maxAdvanceMs {
		testAPIError(w, http.StatusBadRequest, "advance_ms must be an integer in [0, 31536000000]")
		return
	}
	s.mu.Lock()
	s.advanceLocked(s.now())
	s.offsetMs.Add(*req.AdvanceMs)
	now := s.now()
	s.advanceLocked(now)
	s.unlockAndFlush()
	writePlainJSON(w, http.StatusOK, map[string]any{"time": now.UnixMilli()})
}
