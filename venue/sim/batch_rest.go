package sim

import (
	"encoding/json"
	"strconv"
)

// Batch order endpoints and the position-mode switch (docs/bybit.md "Trade endpoints",
// §6.4; docs/simulator.md). All signed POST, refused with 10005 for a
// read-only key (route.write).
//
//	POST /v5/order/create-batch -> {"list":[{"category","symbol","orderId","orderLinkId","createAt"}]}
//	POST /v5/order/amend-batch  -> {"list":[{"category","symbol","orderId","orderLinkId"}]}
//	POST /v5/order/cancel-batch -> {"list":[{"category","symbol","orderId","orderLinkId"}]}
//	POST /v5/position/switch-mode -> {}
//
// A batch body is {"category", "request":[{...}, ...]}. Each item is run
// exactly as the single endpoint runs it (create, amend, cancel), in
// order, with the batch's category; an item's refusal does not stop the
// others. The envelope says retCode 0 whenever the batch itself was
// well-formed; retExtInfo.list[i] = {"code","msg"} is item i's own answer,
// and result.list[i] carries its ids (empty strings when it was refused).

// batchLimits is the most items one batch may carry, per category.
var batchLimits = map[string]int{catLinear: 20, catSpot: 10}

type batchItemResult struct {
	Category    string  `json:"category"`
	Symbol      string  `json:"symbol"`
	OrderID     string  `json:"orderId"`
	OrderLinkID string  `json:"orderLinkId"`
	CreateAt    *string `json:"createAt,omitempty"`
}

type batchItemCode struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

type batchResult struct {
	List []batchItemResult `json:"list"`
}

type batchExtInfo struct {
	List []batchItemCode `json:"list"`
}

// batch returns the handler of a batch endpoint that runs each item
// through single; create adds createAt to every item's result.
func (s *Sim) batch(single func(*call) response, create bool) func(*call) response {
	return func(c *call) response {
		var body struct {
			Category string            `json:"category"`
			Request  []json.RawMessage `json:"request"`
		}
		if err := json.Unmarshal(c.body, &body); err != nil {
			return fail(codeParams, "params error: the body must be a JSON object with category and a request list")
		}
		if r := orderCategory(body.Category); r != nil {
			return *r
		}
		if len(body.Request) == 0 {
			return fail(codeParams, "params error: request must list at least one order")
		}
		if most := batchLimits[body.Category]; len(body.Request) > most {
			return fail(codeParams, "params error: a "+body.Category+" batch carries at most "+strconv.Itoa(most)+" orders")
		}
		res := batchResult{List: make([]batchItemResult, 0, len(body.Request))}
		ext := batchExtInfo{List: make([]batchItemCode, 0, len(body.Request))}
		for _, raw := range body.Request {
			item, resp := s.batchItem(c, body.Category, raw, single)
			if create {
				at := ""
				if resp.code == 0 {
					at = itoa(c.now.UnixMilli())
				}
				item.CreateAt = &at
			}
			res.List = append(res.List, item)
			ext.List = append(ext.List, batchItemCode{Code: resp.code, Msg: resp.msg})
		}
		return response{msg: "OK", result: res, ext: ext}
	}
}

// batchItem runs one item of a batch as its own request with the batch's
// category and returns its result row and the single endpoint's answer.
func (s *Sim) batchItem(c *call, category string, raw json.RawMessage, single func(*call) response) (batchItemResult, response) {
	row := batchItemResult{Category: category}
	p, bad := parseParams(raw)
	if bad != nil {
		return row, *bad
	}
	row.Symbol, _ = p.str("symbol")
	cat, _ := json.Marshal(category)
	p["category"] = cat
	body, _ := json.Marshal(p)
	sub := *c
	sub.body = body
	resp := single(&sub)
	if ids, ok := resp.result.(orderIDResult); ok && resp.code == 0 {
		row.OrderID, row.OrderLinkID = ids.OrderID, ids.OrderLinkID
	}
	return row, resp
}

// POST /v5/position/switch-mode

// Position-mode refusals (docs/bybit.md "Position endpoints").
const (
	codeModeHasPosition = 110024
	codeModeNotModified = 110025
	codeHedgeNotAvail   = 110029
)

// positionSwitchMode answers a position-mode switch. The simulator trades
// one-way only (mode 0): asking for hedge mode (3) is refused as Bybit
// refuses a symbol without hedge mode (110029), and asking for one-way
// answers Bybit's "not modified" (110025). A symbol a test seeded in hedge
// mode has positions, so switching it is refused with 110024.
func (s *Sim) positionSwitchMode(c *call) response {
	p, bad := parseParams(c.body)
	if bad != nil {
		return *bad
	}
	f, bad := p.strings("category", "symbol", "coin", "mode")
	if bad != nil {
		return *bad
	}
	if f["category"] == "" {
		return fail(codeParams, "params error: category is required")
	}
	if f["category"] != catLinear {
		return fail(codeParams, "Illegal category")
	}
	sym := f["symbol"]
	switch {
	case sym == "" && f["coin"] == "":
		return fail(codeParams, "params error: symbol or coin is required")
	case sym != "" && s.catalog.get(catLinear, sym) == nil:
		return fail(codeParams, msgSymbolInvalid)
	case f["mode"] != "0" && f["mode"] != "3":
		return fail(codeParams, "params error: mode must be 0 (one-way) or 3 (hedge)")
	case f["mode"] == "3":
		return fail(codeHedgeNotAvail, "Hedge mode is not available for this symbol")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := c.accountLedgerLocked()
	for _, in := range s.catalog.list[catLinear] {
		if (in.symbol == sym || (sym == "" && in.quote == f["coin"])) && l.hedgeSymbolLocked(in.symbol) {
			return fail(codeModeHasPosition, "You have an existing position, so position mode cannot be switched")
		}
	}
	return fail(codeModeNotModified, "Position mode is not modified")
}
