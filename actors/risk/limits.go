package risk

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/state"
	"github.com/guarded-exchange/guarded-exchange/messages"
)

// The decision half of the action path for place_order (docs/tools.md "The action path" steps 1
// to 5): pure functions of the user's state, the market as the venue
// showed it, and what the actions in flight reserve. They change nothing;
// the user actor journals what they decide.

// Market is what the decision needs from the venue.
type Market struct {
	Instrument *messages.Instrument
	Ticker     *messages.Ticker
	// Band is the venue's price band for new orders; nil when the venue
	// gave none.
	Band *messages.PriceLimit
	// Position is the linear symbol's position row (nil when the venue
	// shows none); PositionRead says it was read.
	Position     *messages.Position
	PositionRead bool
	// PushedOpen: the private stream showed a position open on the
	// symbol since its last REST read (no leverage step then).
	PushedOpen bool
	// Confirmed: an approved action's run (it counts as confirmed);
	// Worst is then a market order's worst price as shown to the human.
	Confirmed bool
	Worst     decimal.Decimal
}

var hundred = decimal.NewFromInt(100)

// validatePlace is step 1: the arguments alone. Its refusals are
// invalid_params, not journaled, and never echo a value.
func validatePlace(a messages.PlaceOrderArgs) *messages.Error {
	e := firstError(checkSymbol(a.Symbol), checkCategory(a.Category),
		checkOneOf("side", a.Side, messages.Sides...), checkOneOf("order_type", a.OrderType, "Limit", "Market"),
		checkKey(a.IdempotencyKey),
		checkIf(!a.Qty.IsPositive(), "qty", "must be a positive decimal string"),
		checkIf(a.OrderType == "Limit" && (!a.Price.Valid || !a.Price.Decimal.IsPositive()), "price", "a Limit order needs a positive price"),
		checkIf(a.OrderType == "Market" && a.Price.Valid, "price", "a Market order takes no price; the server sets the worst price from slippage_pct"))
	if e == nil && a.ReduceOnly && a.Category != messages.CategoryLinear {
		e = messages.InvalidParams("reduce_only", "reduce-only orders exist on linear only")
		e.Details["reason"] = "linear_only"
	}
	return e
}

// PlaceArgsHash is the idempotency fingerprint of the arguments: decimals
// in their shortest spelling ("0.10" = "0.1"), the key and dry_run left
// out.
func PlaceArgsHash(tool string, a messages.PlaceOrderArgs) string {
	price := ""
	if a.Price.Valid {
		price = a.Price.Decimal.String()
	}
	reduce := "0"
	if a.ReduceOnly {
		reduce = "1"
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{tool, string(a.Category), a.Symbol, a.Side, a.OrderType, a.Qty.String(), price, reduce}, "|")))
	return hex.EncodeToString(sum[:])
}

// ruleViolation is an instrument_rule_violation naming the rule.
func ruleViolation(msg, next string, details map[string]any) *messages.Error {
	return &messages.Error{Code: messages.CodeInstrumentRuleViolation, Message: msg, NextStep: next, Details: details}
}

// roundToTick rounds p to a multiple of tick, down or up.
func roundToTick(p, tick decimal.Decimal, up bool) decimal.Decimal {
	if !tick.IsPositive() {
		return p
	}
	q := p.Div(tick)
	if up {
		return q.Ceil().Mul(tick)
	}
	return q.Floor().Mul(tick)
}

// DecidePlace is steps 2 to 5 for a validated place_order: the plan to
// execute and the answer it will give, or the refusal (to journal as
// order_refused). A market order is sent as Limit IOC at the best ask
// (buy) or bid (sell) moved by slippage_pct, rounded to the tick on the
// safe side (a buy never above, a sell never below that price) and kept
// inside the venue's price band; the order is valued at that worst price.
// Whether a human must confirm it is the plan's ConfirmedBy (execute
// refuses such a plan unless it runs an approved confirmation).
func DecidePlace(s *state.User, tool string, a messages.PlaceOrderArgs, venue messages.VenueLevel, env string, m Market, reserved Reservation, now time.Time) (Plan, *messages.OrderAnswer, *messages.Error) {
	var none Plan
	risk := !a.ReduceOnly
	// Kill switch, profile, arming, key and allowlist first: they need
	// no market data and must refuse whatever the instrument says.
	if e := gateOn(s, venue, env, tool, a.Category, a.Symbol, risk); e != nil {
		return none, nil, e
	}
	p := s.Effective(venue, env)
	in := m.Instrument
	if in == nil || in.Status != "Trading" {
		return none, nil, ruleViolation("the instrument is not trading", "choose an instrument that trades (get_instrument)", map[string]any{"rule": "status"})
	}
	if risk {
		if e := usdtOnly(in); e != nil {
			return none, nil, e
		}
	}
	qty := plannedQty(a.Qty, in.QtyStep)
	if !qty.IsPositive() || qty.LessThan(in.MinOrderQty) {
		return none, nil, ruleViolation("the quantity is below the instrument's minimum", "order at least min_qty",
			map[string]any{"rule": "min_qty", "min_qty": in.MinOrderQty.String(), "qty_step": in.QtyStep.String()})
	}
	buy := a.Side == "Buy"
	if a.ReduceOnly {
		// A reduce-only order needs an opposite position and is cut to
		// its size.
		pos := m.Position
		if pos != nil && pos.Size.IsPositive() && !knownSide(pos.Side) {
			return none, nil, unreadablePosition()
		}
		if pos == nil || !pos.Size.IsPositive() || pos.Side == a.Side {
			return none, nil, &messages.Error{Code: messages.CodeNotFound, Message: "there is no position this reduce-only order could reduce",
				NextStep: "check get_positions; a reduce-only Sell reduces a long, a Buy a short", Details: map[string]any{"reason": "position_not_found"}}
		}
		if qty.GreaterThan(pos.Size) {
			qty = pos.Size
		}
	} else if a.Category == messages.CategoryLinear {
		// The order takes the symbol's current leverage: it must not
		// exceed max_leverage. Unknown leverage fails closed.
		if !m.PositionRead || m.Position == nil || !m.Position.Leverage.IsPositive() {
			return none, nil, state.LimitExceeded("max_leverage", p.MaxLeverage.String(), "the symbol's current leverage could not be read, so the order cannot be checked against max_leverage",
				"set the leverage (set_leverage) and try again", map[string]any{"reason": "leverage_unknown"})
		}
		if m.Position.Leverage.GreaterThan(p.MaxLeverage) {
			return none, nil, leverageAboveMax(p, m.Position, in, a.Symbol, "place the order again")
		}
	}
	maxQty := in.MaxOrderQty
	if a.OrderType == "Market" && in.MaxMarketQty.IsPositive() {
		maxQty = in.MaxMarketQty
	}
	if maxQty.IsPositive() && qty.GreaterThan(maxQty) {
		return none, nil, ruleViolation("the quantity is above the instrument's maximum", "make the order smaller",
			map[string]any{"rule": "max_qty", "max_qty": maxQty.String()})
	}
	var price decimal.Decimal
	tif := "GTC"
	if a.OrderType == "Limit" {
		price = a.Price.Decimal
		if in.TickSize.IsPositive() && !price.Mod(in.TickSize).IsZero() {
			lo, hi := roundToTick(price, in.TickSize, false), roundToTick(price, in.TickSize, true)
			return none, nil, ruleViolation("the price is not on the instrument's tick", "use one of the nearest valid prices",
				map[string]any{"rule": "tick_size", "tick_size": in.TickSize.String(), "nearest_prices": []string{lo.String(), hi.String()}})
		}
	} else {
		tif = "IOC"
		best := decimal.Zero
		if m.Ticker != nil {
			best = m.Ticker.Bid1Price
			if buy {
				best = m.Ticker.Ask1Price
			}
		}
		if !best.IsPositive() && !m.Worst.IsPositive() {
			return none, nil, &messages.Error{Code: messages.CodeExchangeUnavailable, Message: "the venue shows no best price for this side; a market order cannot be bounded",
				NextStep: "try again later, or place a Limit order", Details: map[string]any{"reason": "no_quote"}}
		}
		slip := p.SlippagePct.Div(hundred)
		if buy {
			price = roundToTick(best.Mul(decimal.NewFromInt(1).Add(slip)), in.TickSize, false)
		} else {
			price = roundToTick(best.Mul(decimal.NewFromInt(1).Sub(slip)), in.TickSize, true)
		}
		if m.Worst.IsPositive() {
			// An approved market order keeps the worst price the human
			// was shown (the band below may only make it better).
			price = m.Worst
		}
		if m.Band != nil {
			// Capped inside the band with a margin: the band follows the
			// mark, and a price right at its edge is refused (110003) when
			// the mark moves before the order arrives. A tenth of the
			// band's width still crosses a best price near the mark.
			margin := decimal.Zero
			if m.Band.BuyLimit.GreaterThan(m.Band.SellLimit) && m.Band.SellLimit.IsPositive() {
				margin = m.Band.BuyLimit.Sub(m.Band.SellLimit).Div(decimal.NewFromInt(10))
			}
			if cap := m.Band.BuyLimit.Sub(margin); buy && m.Band.BuyLimit.IsPositive() && price.GreaterThan(cap) {
				price = roundToTick(cap, in.TickSize, false)
			}
			if floor := m.Band.SellLimit.Add(margin); !buy && m.Band.SellLimit.IsPositive() && price.LessThan(floor) {
				price = roundToTick(floor, in.TickSize, true)
			}
		}
	}
	if e := priceBand(price, buy, in, m.Band); e != nil {
		return none, nil, e
	}
	// The most the order can be worth: the limit price or the worst
	// price of a market buy; for any sell, its price or the best bid,
	// whichever is higher (a marketable sell fills at the bid, above its
	// limit). The venue's minimum value is checked on the order's own
	// price.
	notional := qty.Mul(sellPrice(price, buy, m.Ticker))
	if in.MinNotional.IsPositive() && qty.Mul(price).LessThan(in.MinNotional) {
		return none, nil, ruleViolation("the order value is below the instrument's minimum", "make the order larger",
			map[string]any{"rule": "min_notional", "min_notional": in.MinNotional.String()})
	}
	if risk && notional.GreaterThan(p.MaxOrderNotionalUSDT) {
		return none, nil, state.LimitExceeded("max_order_notional_usdt", p.MaxOrderNotionalUSDT.String(), "the order value (at the worst price it can fill at) exceeds max_order_notional_usdt",
			"make the order smaller", map[string]any{"notional_usdt": notional.String()})
	}
	daily, perMinute, unconfirmed := s.Counters.Window(now, env)
	if m.Confirmed {
		unconfirmed = 0 // a human confirmed this one
	}
	if risk {
		used := daily.Add(reserved.NotionalUSDT)
		if used.Add(notional).GreaterThan(p.DailyNotionalCapUSDT) {
			return none, nil, state.LimitExceeded("daily_notional_cap_usdt", p.DailyNotionalCapUSDT.String(),
				"the risk-increasing orders of the last 24 h would exceed daily_notional_cap_usdt", "wait until earlier orders leave the 24 h window; splitting does not help",
				map[string]any{"used_usdt": used.String(), "remaining_usdt": decimal.Max(decimal.Zero, p.DailyNotionalCapUSDT.Sub(used)).String()})
		}
	}
	if risk {
		// The rates limit risk-increasing actions only: a reduce-only
		// order or a close always goes through (docs/tools.md "The action path" step 2, D51).
		if e := rateLimits(p, perMinute, unconfirmed, reserved); e != nil {
			return none, nil, e
		}
	}
	req := &messages.CreateOrderRequest{Category: a.Category, Symbol: a.Symbol, Side: a.Side, OrderType: "Limit", Qty: qty, Price: price,
		TimeInForce: tif, ReduceOnly: a.ReduceOnly}
	plan := Plan{Tool: tool, Category: a.Category, Symbol: a.Symbol, Create: req, Notional: notional, RiskIncreasing: risk,
		IdempotencyKey: a.IdempotencyKey, ArgsSHA256: PlaceArgsHash(tool, a), ConfirmedBy: ConfirmedBy(p, tool, notional)}
	sentAs := "Limit " + tif
	ans := &messages.OrderAnswer{Status: messages.AnswerPreview, Category: a.Category, Symbol: a.Symbol, Side: a.Side, OrderType: a.OrderType,
		SentAs: sentAs, TimeInForce: tif, RequestedQty: a.Qty, Qty: qty, Price: price, NotionalUSDT: notional, ReduceOnly: a.ReduceOnly,
		RiskIncreasing: risk, Origin: messages.OriginSystem, IdempotencyKey: a.IdempotencyKey}
	return plan, ans, nil
}

// plannedQty is the qty an order for qty is sent with: cut down to the
// instrument's qty step.
func plannedQty(qty, step decimal.Decimal) decimal.Decimal {
	if step.IsPositive() {
		return qty.Div(step).Floor().Mul(step)
	}
	return qty
}

// plannedHash is the safety net's fingerprint of a keyless order: its
// arguments with the qty the order is sent with, so that "0.0019" and
// "0.001" are the same order on a step of 0.001 (D55).
func plannedHash(tool string, a messages.PlaceOrderArgs, step decimal.Decimal) string {
	a.Qty = plannedQty(a.Qty, step)
	return PlaceArgsHash(tool, a)
}

// sellPrice is the price an order is valued at: its own price, or for a
// sell the best bid when that is higher, since a sell priced below the
// bid fills at the bid.
func sellPrice(price decimal.Decimal, buy bool, t *messages.Ticker) decimal.Decimal {
	if !buy && t != nil && t.Bid1Price.GreaterThan(price) {
		return t.Bid1Price
	}
	return price
}

// usdtOnly refuses adding risk on an instrument not quoted (and, on
// linear, settled) in USDT: the order's value is in the quote coin and
// the limits are in USDT, so they could not be checked (D56).
func usdtOnly(in *messages.Instrument) *messages.Error {
	if in.QuoteCoin == "USDT" && (in.Category != messages.CategoryLinear || in.SettleCoin == "USDT") {
		return nil
	}
	return ruleViolation("the limits are in USDT and this instrument is not quoted and settled in USDT, so its value cannot be checked",
		"trade a USDT instrument; closing and reducing are not affected", map[string]any{"rule": "quote_coin", "allowed": "USDT"})
}

// rateLimits are max_orders_per_minute and max_unconfirmed_actions_per_hour
// for one more risk-increasing action, counting those in the windows and
// those in flight.
func rateLimits(p messages.Policy, perMinute, unconfirmed int, reserved Reservation) *messages.Error {
	if perMinute+reserved.Orders+1 > p.MaxOrdersPerMinute {
		e := state.LimitExceeded("max_orders_per_minute", itoa(p.MaxOrdersPerMinute), "too many risk-increasing orders in the last minute", "wait a minute; closing and reducing are not limited", nil)
		e.RetryAfterS = 60
		return e
	}
	if unconfirmed+reserved.Orders+1 > p.MaxUnconfirmedActionsPerHour {
		e := state.LimitExceeded("max_unconfirmed_actions_per_hour", itoa(p.MaxUnconfirmedActionsPerHour), "too many unconfirmed risk-increasing actions in the last hour", "wait, or ask a human to lower the need for confirmation; closing and reducing are not limited", nil)
		e.RetryAfterS = 3600
		return e
	}
	return nil
}

// priceBand checks the instrument's price limits and the venue's band.
func priceBand(price decimal.Decimal, buy bool, in *messages.Instrument, band *messages.PriceLimit) *messages.Error {
	if in.MinPrice.IsPositive() && price.LessThan(in.MinPrice) || in.MaxPrice.IsPositive() && price.GreaterThan(in.MaxPrice) {
		return ruleViolation("the price is outside the instrument's price limits", "choose a price within them",
			map[string]any{"rule": "price_limits", "min_price": in.MinPrice.String(), "max_price": in.MaxPrice.String()})
	}
	if band == nil {
		return nil
	}
	if buy && band.BuyLimit.IsPositive() && price.GreaterThan(band.BuyLimit) {
		return ruleViolation("a buy at this price is above the venue's price band", "buy at or below the band",
			map[string]any{"rule": "price_band", "max_buy_price": band.BuyLimit.String()})
	}
	if !buy && band.SellLimit.IsPositive() && price.LessThan(band.SellLimit) {
		return ruleViolation("a sell at this price is below the venue's price band", "sell at or above the band",
			map[string]any{"rule": "price_band", "min_sell_price": band.SellLimit.String()})
	}
	return nil
}

func itoa(v int) string { return decimal.NewFromInt(int64(v)).String() }
