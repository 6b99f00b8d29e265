package sim

import (
	"net/http"
	"sort"
	"strings"
)

// Read endpoints that real client libraries call while they start up
// (ccxt's loadMarkets and fetchBalance, bybit-api helpers), and the answer
// for every /v5/ path the simulator does not serve.
//
//	GET /v5/asset/coin/query-info   signed; the coins of the catalogue
//	GET /v5/account/info            signed; a unified (UTA 2.0) account
//	GET /v5/account/fee-rate        signed; the fees the ledger charges

// codeNotFound is the retCode of a path the simulator does not serve. Bybit
// uses 10404 for "operation not found" on its order-entry WebSocket; the
// REST answer to an unknown path is HTTP 404 (docs/bybit.md "Envelope and rate limits"), which the
// simulator sends with this code in Bybit's envelope so that clients parse
// it like any other refusal.
const codeNotFound = 10404

// notFound answers a path or method the simulator does not serve: HTTP 404
// with Bybit's JSON envelope, never a plain-text page.
func (s *Sim) notFound(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	rec := newRecorder()
	msg := "Not Found: " + r.Method + " " + r.URL.Path + " is not served by the simulator"
	rec.writeJSON(http.StatusNotFound, fail(codeNotFound, msg), now)
	rec.flush(w)
}

// emptyElsewhere wraps an account list read (positions, orders,
// executions) so that the categories Bybit has but the simulator lists no
// instrument in (inverse, option) answer an empty list in Bybit's shape
// instead of a refusal: clients such as ccxt's watchPositions read every
// derivatives category, inverse without symbol or settleCoin (which Bybit
// requires for linear only), before they start. Spot and linear go to h.
func emptyElsewhere(h func(*call) response) func(*call) response {
	return func(c *call) response {
		cat := c.query.Get("category")
		if cat != catInverse && cat != catOption {
			return h(c)
		}
		return ok(emptyListResult{Category: cat, List: []any{}})
	}
}

// emptyListResult is an empty page of an account list read.
type emptyListResult struct {
	Category       string `json:"category"`
	List           []any  `json:"list"`
	NextPageCursor string `json:"nextPageCursor"`
}

// GET /v5/account/info

type accountInfoResult struct {
	UnifiedMarginStatus int    `json:"unifiedMarginStatus"`
	MarginMode          string `json:"marginMode"`
	IsMasterTrader      bool   `json:"isMasterTrader"`
	SpotHedgingStatus   string `json:"spotHedgingStatus"`
	UpdatedTime         string `json:"updatedTime"`
	DcpStatus           string `json:"dcpStatus"`
	TimeWindow          int    `json:"timeWindow"`
	SmpGroup            int    `json:"smpGroup"`
}

// utaStatus is unifiedMarginStatus 6: a unified trade account 2.0 pro, in
// which spot and linear share one wallet, as the simulator's ledger does.
const utaStatus = 6

func (s *Sim) accountInfo(c *call) response {
	return ok(accountInfoResult{
		UnifiedMarginStatus: utaStatus,
		MarginMode:          "REGULAR_MARGIN",
		IsMasterTrader:      false,
		SpotHedgingStatus:   "OFF",
		UpdatedTime:         itoa(c.key.createdAt.UnixMilli()),
		DcpStatus:           "OFF",
		TimeWindow:          10,
		SmpGroup:            0,
	})
}

// GET /v5/account/fee-rate

type feeRateJSON struct {
	Symbol       string `json:"symbol"`
	BaseCoin     string `json:"baseCoin"`
	TakerFeeRate string `json:"takerFeeRate"`
	MakerFeeRate string `json:"makerFeeRate"`
}

type feeRateResult struct {
	List []feeRateJSON `json:"list"`
}

// feeRate answers GET /v5/account/fee-rate. Without category it answers
// for linear: ccxt's fetchTradingFees sends none and expects the
// derivatives rates.
func (s *Sim) feeRate(c *call) response {
	cat, bad := categoryParam(c, catLinear, catSpot, catLinear, catInverse, catOption)
	if bad != nil {
		return *bad
	}
	sym := c.query.Get("symbol")
	if sym != "" && s.catalog.get(cat, sym) == nil {
		return fail(codeParams, msgSymbolInvalid)
	}
	list := []feeRateJSON{}
	for _, in := range s.catalog.list[cat] {
		if sym != "" && in.symbol != sym {
			continue
		}
		taker, maker := spotFee, spotFee
		if cat == catLinear {
			taker, maker = linearTakerFee, linearMakerFee
		}
		list = append(list, feeRateJSON{Symbol: in.symbol, BaseCoin: "", TakerFeeRate: taker.String(), MakerFeeRate: maker.String()})
	}
	return ok(feeRateResult{List: list})
}

// GET /v5/asset/coin/query-info

type coinChainJSON struct {
	ChainType             string `json:"chainType"`
	Confirmation          string `json:"confirmation"`
	WithdrawFee           string `json:"withdrawFee"`
	DepositMin            string `json:"depositMin"`
	WithdrawMin           string `json:"withdrawMin"`
	Chain                 string `json:"chain"`
	ChainDeposit          string `json:"chainDeposit"`
	ChainWithdraw         string `json:"chainWithdraw"`
	MinAccuracy           string `json:"minAccuracy"`
	WithdrawPercentageFee string `json:"withdrawPercentageFee"`
	ContractAddress       string `json:"contractAddress"`
}

type coinJSON struct {
	Name         string          `json:"name"`
	Coin         string          `json:"coin"`
	RemainAmount string          `json:"remainAmount"`
	Chains       []coinChainJSON `json:"chains"`
}

type coinInfoResult struct {
	Rows []coinJSON `json:"rows"`
}

// coinChains describes the one network each simulated coin "moves" on. The
// simulator has no deposits or withdrawals: both are reported disabled.
var coinChains = map[string]coinChainJSON{
	"BTC":  {ChainType: "BTC", Confirmation: "10000", WithdrawFee: "0.0005", DepositMin: "0.0005", WithdrawMin: "0.001", Chain: "BTC", MinAccuracy: "8"},
	"ETH":  {ChainType: "Ethereum", Confirmation: "6", WithdrawFee: "0.0015", DepositMin: "0.0001", WithdrawMin: "0.0015", Chain: "ETH", MinAccuracy: "8"},
	"SOL":  {ChainType: "SOL", Confirmation: "200", WithdrawFee: "0.01", DepositMin: "0.01", WithdrawMin: "0.1", Chain: "SOL", MinAccuracy: "8"},
	"USDT": {ChainType: "Ethereum", Confirmation: "6", WithdrawFee: "8", DepositMin: "0", WithdrawMin: "10", Chain: "ETH", MinAccuracy: "4"},
	"USDC": {ChainType: "Ethereum", Confirmation: "6", WithdrawFee: "8", DepositMin: "0", WithdrawMin: "10", Chain: "ETH", MinAccuracy: "4"},
}

// coins lists every coin of the catalogue plus USDC (a collateral coin of
// the unified wallet), sorted.
func (s *Sim) coins() []string {
	seen := map[string]bool{"USDC": true}
	for _, list := range s.catalog.list {
		for _, in := range list {
			seen[in.baseCoin] = true
			seen[in.quote] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func (s *Sim) coinInfo(c *call) response {
	want := strings.ToUpper(c.query.Get("coin"))
	rows := []coinJSON{}
	for _, coin := range s.coins() {
		if want != "" && coin != want {
			continue
		}
		ch, okc := coinChains[coin]
		if !okc {
			ch = coinChainJSON{ChainType: coin, Confirmation: "1", WithdrawFee: "0", DepositMin: "0", WithdrawMin: "0", Chain: coin, MinAccuracy: "8"}
		}
		ch.ChainDeposit, ch.ChainWithdraw, ch.WithdrawPercentageFee = "0", "0", "0"
		rows = append(rows, coinJSON{Name: coin, Coin: coin, RemainAmount: "0", Chains: []coinChainJSON{ch}})
	}
	return ok(coinInfoResult{Rows: rows})
}
