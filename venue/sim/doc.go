// Package sim is a loopback Bybit V5 simulator: the "paper" venue and the
// counterpart of every venue test (docs/bybit.md says which parts of
// Bybit V5 it reproduces, docs/simulator.md how).
//
// It imports nothing from this module. Build one with New and mount
// Handler, or let Start listen on a loopback address and report its URLs in
// an Announcement. StartInProcess serves the paper venue embedded in the
// server (inprocess.go): no port, only its own dialer reaches it, no test
// endpoints, and only the keys given to ProvisionKey.
//
// # What it serves
//
// REST, in Bybit's envelope {"retCode","retMsg","result","retExtInfo","time"}
// with HTTP 200 for business errors; a path (or method) it does not serve
// gets HTTP 404 with retCode 10404 in the same envelope, never plain text:
//
//	GET /v5/market/tickers, orderbook, kline, instruments-info, price-limit, time   public
//	GET /v5/market/recent-trade                                                     public
//	GET /v5/account/info, /v5/account/fee-rate, /v5/asset/coin/query-info          signed
//	(the account list reads answer an empty list for inverse and option)
//	GET /v5/user/query-api                                                         signed
//	GET /v5/account/wallet-balance, /v5/position/list                              signed
//	GET /v5/order/realtime, /v5/order/history, /v5/execution/list                  signed
//	POST /v5/order/create, amend, cancel, cancel-all                               signed, write
//	POST /v5/position/set-leverage, /v5/position/trading-stop                      signed, write
//	GET /v5/market/funding/history, open-interest, risk-limit                      public
//	GET /v5/market/mark-price-kline, index-price-kline                             public
//	GET /v5/position/closed-pnl, /v5/account/transaction-log                       signed
//	POST /v5/order/create-batch, amend-batch, cancel-batch                         signed, write
//	POST /v5/position/switch-mode (one-way only)                                   signed, write
//
// Instruments: BTCUSDT, ETHUSDT and SOLUSDT in spot and linear, with Bybit's
// rule fields (tickSize, qtyStep/basePrecision, min/max quantities, minimum
// notional or order amount, leverage filter, price-limit ratios).
//
// WebSocket: /v5/public/linear and /v5/public/spot (tickers.{symbol}, on
// linear as a snapshot then deltas; orderbook.{depth}.{symbol} as a
// snapshot then deltas; publicTrade.{symbol}; ws_public.go;
// kline.{interval}.{symbol}, ws_kline.go), /v5/private (auth, ping, order, execution, position,
// wallet; the order engine pushes every change, pushes.go). A subscribe
// refuses only its bad topics and keeps the others. The market's public
// trades are, like its prices, a function of the seed and the clock
// (trades.go).
//
// Real clients: ccxt's bybit class and bybit-api, pinned in
// testdata/clients, run against the simulator in clients_test.go (needs
// node and npm; without them the recorded requests are replayed).
//
// Test endpoints under /sim/ (loopback clients only; see testapi.go):
// POST /sim/keys, POST|GET|DELETE /sim/faults, GET /sim/orders,
// POST /sim/price, POST /sim/clock (testapi_market.go), and
// POST /sim/accounts/{api_key}/balances|positions|orders (account_testapi.go).
//
// Account state (balances, positions, orders, executions) lives in one
// ledger per account (ledger.go); the account reads (account_rest.go)
// derive mark prices, PnL, margins and USD values from it at read time.
// List reads page with opaque, query-bound cursors (cursor.go). With
// Config.StatePath the ledgers are durable: every applied change is written
// to that file before the answer or push that shows it, and an account
// comes back when its key is provisioned again (store.go); paper.go shows
// an account at a glance and starts it over (`paper status`, `paper
// reset`).
//
// # Determinism
//
// Prices, books and candles are pure functions of (Config.Seed, instrument,
// time); see prices.go for the model. Keys and connection ids are drawn from
// the seed in creation order. Order, execution, push and connection ids
// also mix in Config.IDNonce when it is not zero, so two runs with one
// seed never hand out the same id (the paper venue draws one every start). Two simulators with the same seed, the same
// clock and the same request sequence answer with the same bytes; a
// different seed gives different prices and keys. Every timestamp and every
// recv-window or rate-limit decision reads Config.Now, so tests pin time
// instead of sleeping. Only stream pacing (ticker pushes every second,
// injected delays, the private idle cut-off) runs on the real clock.
//
// # The order engine
//
// Orders match against the seeded book; resting orders fill when the
// price reaches them; linear positions are one-way with fees, realised
// PnL and TP/SL; accepted writes apply after Config.VisibilityDelay. The
// model is documented in docs/simulator.md; the clockwork in engine.go.
//
// # Security
//
// Private requests are verified exactly as Bybit does (auth.go): HMAC-SHA256
// over timestamp + key + recv-window header + raw query or body, and the
// recv window now-window <= ts < now+1000. Secrets are never logged. Start
// refuses any non-loopback listen address. Logs go only to Config.Logger.
//
// # Growing it
//
// State is per account (a UID with its keys; accounts.go). Order, position
// and wallet endpoints add routes in buildRoutes (a route marked write is
// refused with 10005 for a read-only key, and its rate limit comes from the
// per-endpoint table in ratelimit.go); because every request runs into a
// buffer before faults decide what reaches the client, a write endpoint gets
// apply-then-drop and apply-then-502 without extra code.
// Accepted orders go into Sim.orders for GET /sim/orders; private pushes go
// are queued by engine events (pushes.go) and delivered after Sim.mu is
// released.
package sim
