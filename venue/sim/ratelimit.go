package sim

import (
	"math"
	"time"
)

// Rate limits (docs/bybit.md "Envelope and rate limits").
//
// Private endpoints: one rolling 1 s bucket per (API key, endpoint,
// category family), with Bybit's default non-VIP numbers. Public market
// endpoints: one rolling bucket per client IP shared by all of them,
// 600 requests per 5 s. A request over the limit answers HTTP 200 retCode
// 10006 "Too many visits!" and is not applied. Every answer that reached a
// bucket carries X-Bapi-Limit (the limit), X-Bapi-Limit-Status (requests
// left in the window) and X-Bapi-Limit-Reset-Timestamp (ms: now when
// allowed; when the oldest request leaves the window when refused).

// uidLimit is a default per-second limit for derivatives and spot.
type uidLimit struct{ linear, spot int }

// privateLimits are Bybit's default per-UID limits per endpoint. Endpoints
// not listed get defaultPrivateLimit.
var privateLimits = map[string]uidLimit{
	"/v5/order/create":           {10, 20},
	"/v5/order/amend":            {10, 10},
	"/v5/order/cancel":           {10, 20},
	"/v5/order/cancel-all":       {10, 20},
	"/v5/order/create-batch":     {10, 20},
	"/v5/order/amend-batch":      {10, 20},
	"/v5/order/cancel-batch":     {10, 20},
	"/v5/order/realtime":         {50, 50},
	"/v5/order/history":          {50, 50},
	"/v5/execution/list":         {50, 50},
	"/v5/position/list":          {50, 50},
	"/v5/position/set-leverage":  {10, 10},
	"/v5/position/trading-stop":  {10, 10},
	"/v5/position/switch-mode":   {10, 10},
	"/v5/account/wallet-balance": {50, 50},
	"/v5/account/info":           {50, 50},
	"/v5/user/query-api":         {10, 10},
}

const (
	defaultPrivateLimit = 10
	privateWindow       = time.Second
	publicLimit         = 600
	publicWindow        = 5 * time.Second
)

// bucketFor returns the limit and window that apply to a request.
func (s *Sim) bucketFor(c *call, rt *route) (limit int, window time.Duration) {
	if !rt.private {
		if s.noPublicRL {
			return math.MaxInt32, publicWindow
		}
		return publicLimit, publicWindow
	}
	l, ok := privateLimits[c.path]
	if !ok {
		return defaultPrivateLimit, privateWindow
	}
	if c.category() == catSpot {
		return l.spot, privateWindow
	}
	return l.linear, privateWindow
}

// bucketKey names the bucket a request draws from.
func (s *Sim) bucketKey(c *call, rt *route) string {
	if !rt.private || c.key == nil {
		return "ip " + c.ip
	}
	family := catLinear
	if c.category() == catSpot {
		family = catSpot
	}
	return "key " + c.key.key + " " + c.path + " " + family
}

// limiter keeps a sliding log of accepted requests per bucket. Not safe for
// concurrent use; Sim.mu guards it. It stays hand-written rather than a
// golang.org/x/time/rate token bucket on purpose: it models Bybit's own
// rolling windows, whose answers (requests left in the window, and the
// reset time when the oldest request leaves it) a token bucket cannot
// give.
type limiter struct {
	buckets map[string][]int64 // accepted request times, ms, ascending
}

func newLimiter() *limiter { return &limiter{buckets: make(map[string][]int64)} }

// take records a request at nowMs if the bucket has room. It returns
// whether the request is allowed, how many remain in the window, and the
// reset timestamp in ms.
func (l *limiter) take(key string, limit int, window time.Duration, nowMs int64) (allowed bool, remaining int, resetMs int64) {
	w := window.Milliseconds()
	hits := l.buckets[key]
	i := 0
	for i < len(hits) && hits[i] <= nowMs-w {
		i++
	}
	hits = hits[i:]
	if len(hits) >= limit {
		l.buckets[key] = hits
		return false, 0, hits[0] + w
	}
	hits = append(hits, nowMs)
	l.buckets[key] = hits
	return true, limit - len(hits), nowMs
}
