package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The REST pipeline for every path under /v5/:
//
//  1. route lookup (unknown path, or the wrong one of GET and POST: HTTP 404
//     with retCode 10404 in Bybit's envelope; method other than GET/POST:
//     HTTP 400; GET with a body: HTTP 403);
//  2. fault plan for the path (POST /sim/faults), decided before anything
//     runs so counters advance once per request;
//  3. a rate_limit or a non-applying http_5xx fault answers without running
//     the request;
//  4. otherwise the request runs into a buffer: authentication (private
//     paths), the rate-limit bucket, then the handler; everything a handler
//     changes is applied at this point;
//  5. an injected delay waits; drop_response then closes the connection with
//     nothing written (the request was applied); http_5xx with apply=true
//     replaces the answer with a 502; otherwise the buffer is sent.
//
// So a later write endpoint gets apply-then-drop for free: it only changes
// state inside its handler.

// maxBody bounds request bodies.
const maxBody = 1 << 20

// A route is one REST endpoint.
type route struct {
	method  string
	private bool // signed; everything under /v5/ except /v5/market/
	write   bool // changes state: refused with 10005 for a read-only key
	handler func(*call) response
}

// buildRoutes lists every REST endpoint. Later endpoints (orders,
// positions, wallet) are added here.
func (s *Sim) buildRoutes() map[string]*route {
	get := func(h func(*call) response) *route { return &route{method: http.MethodGet, handler: h} }
	private := func(method string, h func(*call) response) *route {
		return &route{method: method, private: true, handler: h}
	}
	write := func(h func(*call) response) *route {
		return &route{method: http.MethodPost, private: true, write: true, handler: h}
	}
	return map[string]*route{
		"/v5/market/tickers":          get(s.marketTickers),
		"/v5/market/orderbook":        get(s.marketOrderbook),
		"/v5/market/kline":            get(s.marketKline),
		"/v5/market/instruments-info": get(s.marketInstruments),
		"/v5/market/price-limit":      get(s.marketPriceLimit),
		"/v5/market/time":             get(s.marketTime),
		"/v5/market/recent-trade":     get(s.marketRecentTrade),
		"/v5/user/query-api":          private(http.MethodGet, s.queryAPI),
		"/v5/account/wallet-balance":  private(http.MethodGet, s.walletBalance),
		"/v5/position/list":           private(http.MethodGet, emptyElsewhere(s.positionList)),
		"/v5/order/realtime":          private(http.MethodGet, emptyElsewhere(s.orderRealtime)),
		"/v5/order/history":           private(http.MethodGet, emptyElsewhere(s.orderHistory)),
		"/v5/execution/list":          private(http.MethodGet, emptyElsewhere(s.executionList)),
		"/v5/account/info":            private(http.MethodGet, s.accountInfo),
		"/v5/account/fee-rate":        private(http.MethodGet, s.feeRate),
		"/v5/asset/coin/query-info":   private(http.MethodGet, s.coinInfo),
		"/v5/order/create":            write(s.orderCreate),
		"/v5/order/amend":             write(s.orderAmend),
		"/v5/order/cancel":            write(s.orderCancel),
		"/v5/order/cancel-all":        write(s.orderCancelAll),
		"/v5/position/set-leverage":   write(s.positionSetLeverage),
		"/v5/position/trading-stop":   write(s.positionTradingStop),

		// Further paths Bybit clients reach (market_extra.go, closedpnl.go,
		// batch_rest.go).
		"/v5/market/funding/history":   get(s.marketFundingHistory),
		"/v5/market/open-interest":     get(s.marketOpenInterest),
		"/v5/market/risk-limit":        get(s.marketRiskLimit),
		"/v5/market/mark-price-kline":  get(s.priceKline(s.model.mark, tagMarkCandle)),
		"/v5/market/index-price-kline": get(s.priceKline(s.model.index, tagIndexCandle)),
		"/v5/position/closed-pnl":      private(http.MethodGet, emptyElsewhere(s.positionClosedPnl)),
		"/v5/account/transaction-log":  private(http.MethodGet, s.accountTransactionLog),
		"/v5/position/switch-mode":     write(s.positionSwitchMode),
		"/v5/order/create-batch":       write(s.batch(s.orderCreate, true)),
		"/v5/order/amend-batch":        write(s.batch(s.orderAmend, false)),
		"/v5/order/cancel-batch":       write(s.batch(s.orderCancel, false)),
	}
}

// A call is one REST request being served.
type call struct {
	r     *http.Request
	path  string
	body  []byte     // raw body, exactly as received
	query url.Values // parsed query
	now   time.Time  // simulated time, read once per request
	wall  time.Time  // the configured clock without the /sim/clock offset (recv window)
	ip    string     // remote IP
	key   *apiKey    // the authenticated key on private paths
}

// category returns the request's category parameter (query for GET, JSON
// body for POST), for rate-limit buckets.
func (c *call) category() string {
	if c.r.Method == http.MethodGet {
		return c.query.Get("category")
	}
	var b struct {
		Category string `json:"category"`
	}
	_ = json.Unmarshal(c.body, &b)
	return b.Category
}

// A response is a handler's answer, written in the Bybit envelope.
type response struct {
	code   int
	msg    string
	result any
	ext    any
}

func ok(result any) response { return response{msg: "OK", result: result} }

func fail(code int, msg string) response { return response{code: code, msg: msg} }

// Return codes used by the simulator (docs/venue-errors.md).
const (
	codeParams       = 10001
	codeInternal     = 10016
	codeRecvWindow   = 10002
	codeInvalidKey   = 10003
	codeSign         = 10004
	codePermission   = 10005
	codeTooManyVisit = 10006
)

// envelope is Bybit's response wrapper; retCode and time are JSON numbers.
type envelope struct {
	RetCode    int    `json:"retCode"`
	RetMsg     string `json:"retMsg"`
	Result     any    `json:"result"`
	RetExtInfo any    `json:"retExtInfo"`
	Time       int64  `json:"time"`
}

var emptyObject = struct{}{}

// encodeEnvelope renders a response.
func encodeEnvelope(resp response, now time.Time) []byte {
	env := envelope{RetCode: resp.code, RetMsg: resp.msg, Result: resp.result, RetExtInfo: resp.ext, Time: now.UnixMilli()}
	if env.Result == nil {
		env.Result = emptyObject
	}
	if env.RetExtInfo == nil {
		env.RetExtInfo = emptyObject
	}
	b, err := json.Marshal(env)
	if err != nil {
		// Only a programming error gets here; answer like Bybit's internal error.
		b, _ = json.Marshal(envelope{RetCode: 10016, RetMsg: "Internal error", Result: emptyObject, RetExtInfo: emptyObject, Time: now.UnixMilli()})
	}
	return b
}

// recorder buffers a response so faults can delay, replace or drop it after
// the request has been applied.
type recorder struct {
	status int
	header http.Header
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{status: http.StatusOK, header: make(http.Header)} }

func (rec *recorder) writeJSON(status int, resp response, now time.Time) {
	rec.status = status
	rec.header.Set("Content-Type", "application/json")
	rec.header.Set("Timenow", strconv.FormatInt(now.UnixMilli(), 10))
	rec.body.Reset()
	rec.body.Write(encodeEnvelope(resp, now))
}

func (rec *recorder) writeText(status int, contentType, text string) {
	rec.status = status
	rec.header = make(http.Header)
	rec.header.Set("Content-Type", contentType)
	rec.body.Reset()
	rec.body.WriteString(text)
}

func (rec *recorder) flush(w http.ResponseWriter) {
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

// setLimitHeaders sets the three rate-limit headers Bybit sends on every
// response.
func (rec *recorder) setLimitHeaders(limit, remaining int, resetMs int64) {
	rec.header.Set("X-Bapi-Limit", strconv.Itoa(limit))
	rec.header.Set("X-Bapi-Limit-Status", strconv.Itoa(remaining))
	rec.header.Set("X-Bapi-Limit-Reset-Timestamp", strconv.FormatInt(resetMs, 10))
}

const badGatewayBody = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"

func (s *Sim) serveV5(w http.ResponseWriter, r *http.Request) {
	rt := s.routes[r.URL.Path]
	if rt == nil {
		s.notFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "400 Bad Request", http.StatusBadRequest)
		return
	}
	if r.Method != rt.method {
		s.notFound(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "400 Bad Request", http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodGet && len(body) > 0 {
		// Bybit refuses a GET that carries a body (docs/bybit.md "Signing") with a
		// non-JSON 403.
		http.Error(w, "403 Forbidden", http.StatusForbidden)
		return
	}
	c := &call{r: r, path: r.URL.Path, body: body, query: r.URL.Query(), now: s.now(), wall: s.clock(), ip: remoteIP(r)}

	s.mu.Lock()
	plan := s.faults.planLocked(c.path, false)
	s.mu.Unlock()

	rec := newRecorder()
	switch {
	case plan.rateLimit:
		limit, _ := s.bucketFor(c, rt)
		rec.setLimitHeaders(limit, 0, c.now.UnixMilli()+1000)
		rec.writeJSON(http.StatusOK, fail(codeTooManyVisit, "Too many visits!"), c.now)
	case plan.http5xx && !plan.apply:
		rec.writeText(http.StatusBadGateway, "text/html", badGatewayBody)
	default:
		s.handle(rec, c, rt)
		if plan.http5xx {
			rec.writeText(http.StatusBadGateway, "text/html", badGatewayBody)
		}
	}

	if plan.delay > 0 && !s.wait(r.Context(), plan.delay) {
		return
	}
	if plan.drop {
		s.log.Debug("sim: fault drop_response", "path", c.path)
		dropConnection(w)
		return
	}
	rec.flush(w)
}

// handle authenticates, rate-limits and runs one request into rec.
func (s *Sim) handle(rec *recorder, c *call, rt *route) {
	if rt.private {
		status, resp, key := s.authenticate(c)
		if status != 0 || resp.code != 0 {
			if status == 0 {
				status = http.StatusOK
			}
			s.log.Debug("sim: auth refused", "path", c.path, "retCode", resp.code)
			rec.writeJSON(status, resp, c.now)
			return
		}
		c.key = key
		if rt.write && key.readOnly {
			rec.writeJSON(http.StatusOK, fail(codePermission, "Permission denied, please check your API key permissions."), c.now)
			return
		}
	}
	limit, window := s.bucketFor(c, rt)
	s.mu.Lock()
	allowed, remaining, reset := s.limiter.take(s.bucketKey(c, rt), limit, window, c.now.UnixMilli())
	s.mu.Unlock()
	rec.setLimitHeaders(limit, remaining, reset)
	if !allowed {
		s.log.Debug("sim: rate limited", "path", c.path)
		rec.writeJSON(http.StatusOK, fail(codeTooManyVisit, "Too many visits!"), c.now)
		return
	}
	if rt.private {
		// Fills and due commands up to now happen before the request sees
		// the account (engine.go).
		s.settle(c.now)
	}
	resp := rt.handler(c)
	if rt.private && s.storeFailed() {
		// The change (if any) is not durable: answer as Bybit does when it
		// cannot tell the outcome (store.go).
		resp = fail(codeInternal, "Internal error")
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		attrs := []any{"method", c.r.Method, "path", c.path, "retCode", resp.code}
		if c.key != nil {
			attrs = append(attrs, "key_id", c.key.id)
		}
		s.log.Debug("sim: request", attrs...)
	}
	rec.writeJSON(http.StatusOK, resp, c.now)
}

// wait sleeps for d unless the client goes away or the simulator shuts
// down; it reports whether the full delay passed.
func (s *Sim) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closed:
		return false
	}
}

// dropConnection closes the client connection without writing a response.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		// HTTP/2 or a test recorder: the closest we can do is abort the
		// handler, which makes net/http reset the stream.
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // reset, like a proxy that gave up
	}
	_ = conn.Close()
}

// remoteIP returns the IP part of r.RemoteAddr.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// isLoopbackRequest reports whether r came from a loopback address.
func isLoopbackRequest(r *http.Request) bool {
	ip := net.ParseIP(remoteIP(r))
	return ip != nil && ip.IsLoopback()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
