package venue

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Defaults applied by NewClient for zero Config fields.
const (
	DefaultRecvWindow = 5 * time.Second
	// WriteRecvWindow is the longest X-BAPI-RECV-WINDOW a write (every
	// POST) carries, whatever Config.RecvWindow says: the exchange refuses
	// a write that arrives later than its timestamp plus this, so a
	// reconcile knows when a write already sent can no longer land
	// (docs/cluster.md "Fenced venue writes", D198).
	WriteRecvWindow    = 5 * time.Second
	DefaultHTTPTimeout = 10 * time.Second
	DefaultReadRetries = 2
	// maxBackoff caps DefaultBackoff.
	maxBackoff = 2 * time.Second
	// maxBodyBytes bounds what is read from one response.
	maxBodyBytes = 8 << 20
)

// Config configures a Client. The zero value of each field means its
// default. NewClient copies it; later changes have no effect.
type Config struct {
	// BaseURL is the REST root, e.g. "https://api-demo.bybit.com", a
	// loopback simulator "http://127.0.0.1:PORT", or the in-process paper
	// venue "http://paper.invalid" (with HTTPClient carrying its dialer).
	// Scheme http or https and a host are required; a trailing slash is
	// ignored.
	BaseURL string
	// APIKey is the Bybit key; empty means only public calls are possible
	// (signed calls fail with exchange_credentials_invalid, without network).
	APIKey string
	// APISecret is the key's secret. It is used only to sign and is never
	// logged nor put into an error.
	APISecret string
	// RecvWindow is sent as X-BAPI-RECV-WINDOW, in whole milliseconds.
	// Zero means 5 s.
	RecvWindow time.Duration
	// HTTPClient sends requests. Nil means a client with a 10 s timeout. The
	// client is copied and redirects are refused on the copy, so signed
	// requests are never replayed to another URL; its Transport is shared,
	// which is how a venue without a network address is reached (the
	// embedded paper venue's Transport dials it in-process).
	HTTPClient *http.Client
	// Now is the clock for X-BAPI-TIMESTAMP and retry_after_s. Nil means
	// time.Now.
	Now func() time.Time
	// ReadRetries is the number of extra attempts for a GET after a transient
	// failure. Zero means 2; a negative value means no retries.
	ReadRetries int
	// Backoff returns the wait before retry number attempt (0 for the first
	// retry). Nil means DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Logger receives debug and warning lines (never secrets, signatures or
	// exchange payloads). Nil means discard. It must not write to stdout.
	Logger *slog.Logger
}

// String redacts the secret so a Config printed with %v or %+v leaks nothing.
func (c Config) String() string {
	return "venue.Config{BaseURL: " + strconv.Quote(c.BaseURL) + ", APIKey: " + redactKey(c.APIKey) + ", APISecret: [redacted]}"
}

// GoString redacts the secret for %#v.
func (c Config) GoString() string { return c.String() }

// LogValue redacts the secret for slog.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("api_key", redactKey(c.APIKey)),
	)
}

// redactKey keeps a short prefix of the (non-secret) API key for log
// correlation.
func redactKey(k string) string {
	if k == "" {
		return `""`
	}
	if len(k) > 4 {
		return k[:4] + "…"
	}
	return "…"
}

// DefaultBackoff is 100 ms << attempt, capped at 2 s, with jitter: the wait
// is uniformly drawn from [d/2, d].
func DefaultBackoff(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	d := maxBackoff
	if attempt < 5 {
		d = min(100*time.Millisecond<<attempt, maxBackoff)
	}
	half := d / 2
	return half + rand.N(half+1)
}

// Client is a Bybit V5 REST client. It is safe for concurrent use.
type Client struct {
	// fixed at construction
	base       *url.URL
	baseStr    string
	apiKey     string
	secret     string
	recvWindow string // milliseconds, decimal
	// writeRecvWindow is recvWindow capped at WriteRecvWindow.
	writeRecvWindow string
	http            *http.Client
	now             func() time.Time
	retries         int
	backoff         func(int) time.Duration
	log             *slog.Logger
}

// String hides the secret when a Client is printed.
func (c *Client) String() string {
	return "venue.Client{" + c.baseStr + ", key " + redactKey(c.apiKey) + "}"
}

// GoString hides the secret for %#v.
func (c *Client) GoString() string { return c.String() }

// NewClient validates cfg, applies defaults and returns a Client. A bad
// BaseURL or RecvWindow is invalid_params.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || cfg.BaseURL == "" {
		return nil, messages.InvalidParams("base_url", "not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, messages.InvalidParams("base_url", "scheme must be http or https")
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, messages.InvalidParams("base_url", "host is missing")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, messages.InvalidParams("base_url", "must not carry user info, a query or a fragment")
	}
	if (cfg.APIKey == "") != (cfg.APISecret == "") {
		return nil, messages.InvalidParams("api_key", "API key and secret must be given together")
	}
	rw := cfg.RecvWindow
	if rw == 0 {
		rw = DefaultRecvWindow
	}
	if rw < time.Millisecond || rw%time.Millisecond != 0 || rw > time.Minute {
		return nil, messages.InvalidParams("recv_window", "must be whole milliseconds between 1 ms and 60 s")
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		hc.Timeout = DefaultHTTPTimeout
		hc.Transport = defaultTransport
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{
		base:            u,
		baseStr:         u.String(),
		apiKey:          cfg.APIKey,
		secret:          cfg.APISecret,
		recvWindow:      strconv.FormatInt(rw.Milliseconds(), 10),
		writeRecvWindow: strconv.FormatInt(min(rw, WriteRecvWindow).Milliseconds(), 10),
		http:            &hc,
		now:             cfg.Now,
		retries:         cfg.ReadRetries,
		backoff:         cfg.Backoff,
		log:             cfg.Logger,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.retries == 0 {
		c.retries = DefaultReadRetries
	} else if c.retries < 0 {
		c.retries = 0
	}
	if c.backoff == nil {
		c.backoff = DefaultBackoff
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// defaultTransport is shared by the clients built without an HTTPClient.
// http.DefaultTransport keeps only 2 idle connections per host, so a
// decision's market reads (sent at once) and many users on one venue would
// open a new connection (on a real venue, a TLS handshake) for most
// requests; this one keeps up to 64. Everything else is the default's.
var defaultTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()

// Sign returns the lowercase hex HMAC-SHA256 of payload keyed by secret, as
// Bybit V5 expects in X-BAPI-SIGN (docs/bybit.md "Signing").
func Sign(secret, payload string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(payload))
	return hex.EncodeToString(m.Sum(nil))
}

// QueryParam is one key=value pair of a query string.
type QueryParam struct {
	Key, Value string
}

// Query is a query string that keeps insertion order; Encode gives the exact
// string that is both signed and sent.
type Query []QueryParam

// Add returns q with key=value appended.
func (q Query) Add(key, value string) Query { return append(q, QueryParam{key, value}) }

// Encode returns "k1=v1&k2=v2" in insertion order, without a leading "?".
// Each part is escaped with url.QueryEscape, except that a space becomes
// "%20" rather than "+": the result holds only RFC 3986 unreserved
// characters, "%XX" escapes and the separators, so the signed bytes decode
// the same way whatever the server's query parser (caller-supplied values
// such as cursors may contain anything).
func (q Query) Encode() string {
	var b strings.Builder
	for i, p := range q {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(escapeQueryPart(p.Key))
		b.WriteByte('=')
		b.WriteString(escapeQueryPart(p.Value))
	}
	return b.String()
}

// escapeQueryPart is url.QueryEscape with "%20" for a space. QueryEscape
// turns a literal "+" into "%2B", so every "+" it leaves is a space.
func escapeQueryPart(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// RateLimit is what the X-Bapi-Limit* headers said (docs/bybit.md "Envelope and rate limits"). Zero
// fields mean the header was absent or unreadable.
type RateLimit struct {
	// Limit is X-Bapi-Limit, the endpoint's limit per window.
	Limit int
	// Remaining is X-Bapi-Limit-Status.
	Remaining int
	// Reset is X-Bapi-Limit-Reset-Timestamp: when the window resets.
	Reset time.Time
}

// Response describes the venue's answer to one call (the last attempt).
type Response struct {
	// RetCode is the envelope's retCode (0 = success).
	RetCode int
	// RetMsg is the envelope's retMsg, sanitised like UntrustedText (the
	// signed string Bybit echoes on a signature error is cut out). It is
	// exchange text: untrusted.
	RetMsg string
	// Time is the envelope's server time (zero if absent).
	Time       time.Time
	RateLimit  RateLimit
	HTTPStatus int
}

// envelope is Bybit's response wrapper. retCode and time arrive as numbers
// from the venue and as numeric strings in recorded samples.
type envelope struct {
	RetCode flexNum         `json:"retCode"`
	RetMsg  string          `json:"retMsg"`
	Result  json.RawMessage `json:"result"`
	Time    flexNum         `json:"time"`
}

// Get sends a GET to path (e.g. "/v5/market/tickers") with query. When signed
// is true the request carries the X-BAPI-* headers and the encoded query is
// the signed payload. On success the envelope's result is decoded into result
// (if non-nil). Transient failures are retried (Config.ReadRetries).
//
// The *Response describes the last answer received; it is nil when no answer
// arrived. Every error is a *messages.Error.
func (c *Client) Get(ctx context.Context, path string, query Query, signed bool, result any) (*Response, error) {
	return c.do(ctx, http.MethodGet, path, query.Encode(), nil, signed, result)
}

// Post sends a signed POST to path. body is marshalled once to JSON (a
// json.RawMessage or []byte is sent verbatim and must be valid JSON; nil
// sends "{}"); those exact bytes are signed and sent. A POST is never
// retried: a transient failure is outcome_unknown and the caller must look
// the action up rather than resend it.
func (c *Client) Post(ctx context.Context, path string, body any, result any) (*Response, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
		raw = []byte("{}")
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	default:
		var err error
		raw, err = json.Marshal(body)
		if err != nil {
			return nil, messages.Internal(err)
		}
	}
	if !json.Valid(raw) {
		return nil, messages.Internal(errors.New("venue: POST body is not valid JSON"))
	}
	return c.do(ctx, http.MethodPost, path, "", raw, true, result)
}

func (c *Client) do(ctx context.Context, method, path, rawQuery string, body []byte, signed bool, result any) (*Response, error) {
	write := method != http.MethodGet
	if !strings.HasPrefix(path, "/") {
		return nil, messages.Internal(errors.New("venue: path must start with /"))
	}
	if signed && (c.apiKey == "" || c.secret == "") {
		f := &failure{rule: ruleByFailure[FailNoKey], reason: string(FailNoKey),
			cause: errors.New("venue: signed call without an API key")}
		e := f.toError(write, path, 0, c.now())
		e.Message = "no exchange key is configured for this venue"
		return nil, e
	}
	attempts := 0
	for {
		attempts++
		start := time.Now()
		resp, f := c.attempt(ctx, method, path, rawQuery, body, signed, result)
		lg := c.log.With(slog.String("method", method), slog.String("endpoint", path), slog.Int("attempt", attempts),
			slog.Duration("elapsed", time.Since(start)))
		if resp != nil {
			lg = lg.With(slog.Int("http_status", resp.HTTPStatus), slog.Int("ret_code", resp.RetCode))
		}
		if f == nil {
			lg.Debug("venue call ok")
			return resp, nil
		}
		if f.internal != nil {
			return nil, messages.Internal(f.internal)
		}
		if f.refused != nil {
			lg.Warn("venue write not sent: refused by its send guard", slog.String("code", string(f.refused.Code)))
			return nil, notSent(f.refused)
		}
		retry := !write && f.rule.RetryRead && f.reason != string(FailCanceled) &&
			ctx.Err() == nil && attempts <= c.retries
		if !retry {
			e := f.toError(write, path, attempts, c.now())
			lg.Warn("venue call failed", slog.String("code", string(e.Code)), slog.String("reason", f.reason))
			return resp, e
		}
		wait := c.backoff(attempts - 1)
		lg.Warn("venue call failed, retrying", slog.String("reason", f.reason), slog.Duration("backoff", wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			cf := &failure{rule: ruleByFailure[FailCanceled], reason: string(FailCanceled), cause: ctx.Err()}
			return resp, cf.toError(write, path, attempts, c.now())
		case <-t.C:
		}
	}
}

// attempt performs one HTTP exchange. It returns the Response when an answer
// arrived, and a non-nil failure when the call did not succeed.
func (c *Client) attempt(ctx context.Context, method, path, rawQuery string, body []byte, signed bool, result any) (*Response, *failure) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawPath = ""
	u.RawQuery = rawQuery
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		// Nothing was sent; this is a bug on our side, not a venue failure.
		return nil, &failure{internal: err}
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if signed {
		ts := strconv.FormatInt(c.now().UnixMilli(), 10)
		payload := rawQuery
		if body != nil {
			payload = string(body)
		}
		rw := c.recvWindow
		if method != http.MethodGet {
			rw = c.writeRecvWindow
		}
		req.Header.Set("X-BAPI-API-KEY", c.apiKey)
		req.Header.Set("X-BAPI-TIMESTAMP", ts)
		req.Header.Set("X-BAPI-RECV-WINDOW", rw)
		req.Header.Set("X-BAPI-SIGN-TYPE", "2")
		req.Header.Set("X-BAPI-SIGN", Sign(c.secret, ts+c.apiKey+rw+payload))
	}
	if method != http.MethodGet {
		// After the timestamp is fixed, so that a write the guard lets
		// through carries a timestamp from while it was allowed.
		if g, _ := ctx.Value(sendGuardKey{}).(func() *messages.Error); g != nil {
			if e := g(); e != nil {
				return nil, &failure{refused: e}
			}
		}
	}
	hr, err := c.http.Do(req)
	if err != nil {
		return nil, transportFailure(ctx, method, path, err)
	}
	defer hr.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(hr.Body, maxBodyBytes))
	resp := &Response{HTTPStatus: hr.StatusCode, RateLimit: parseRateLimit(hr.Header)}
	if err != nil {
		f := transportFailure(ctx, method, path, err)
		f.httpStatus = hr.StatusCode
		f.rateLimit = resp.RateLimit
		return resp, f
	}
	fail := func(r *errorRule, reason string) *failure {
		f := &failure{rule: r, reason: reason, httpStatus: hr.StatusCode, rateLimit: resp.RateLimit}
		if reason == reasonRetCode {
			f.retCode, f.hasRetCode = resp.RetCode, true
			f.retMsg = resp.RetMsg
		}
		return f
	}
	var env envelope
	envOK := json.Unmarshal(raw, &env) == nil && env.RetCode.set
	if envOK {
		code, err := env.RetCode.Int64()
		envOK = err == nil
		resp.RetCode = int(code)
		resp.RetMsg = sanitizeRetMsg(env.RetMsg, c.apiKey, c.secret)
		if ms, err := env.Time.Int64(); err == nil && ms > 0 {
			resp.Time = time.UnixMilli(ms).UTC()
		}
	}
	// A non-zero retCode decides, whatever the HTTP status; otherwise a
	// non-200 status decides by the table, and an unnamed one is unexpected.
	switch {
	case envOK && resp.RetCode != 0:
		return resp, fail(ruleForRetCode(resp.RetCode), reasonRetCode)
	case hr.StatusCode != http.StatusOK:
		if r := ruleForStatus(hr.StatusCode); r != nil {
			return resp, fail(r, reasonHTTPStatus)
		}
		return resp, fail(ruleByFailure[FailUnexpectedStatus], string(FailUnexpectedStatus))
	case !envOK:
		return resp, fail(ruleByFailure[FailNonJSON], string(FailNonJSON))
	}
	if result != nil && len(env.Result) > 0 && string(env.Result) != "null" {
		if err := json.Unmarshal(env.Result, result); err != nil {
			f := fail(ruleByFailure[FailMalformedResult], string(FailMalformedResult))
			f.cause = errors.New("venue: " + path + ": cannot decode result: " + err.Error())
			return resp, f
		}
	}
	return resp, nil
}

// transportFailure classifies an error from http.Client.Do or from reading
// the body. The URL (which holds the query) is dropped from the cause.
func transportFailure(ctx context.Context, method, path string, err error) *failure {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	cause := errors.New("venue: " + method + " " + path + ": " + err.Error())
	switch {
	case ctx.Err() != nil:
		return &failure{rule: ruleByFailure[FailCanceled], reason: string(FailCanceled),
			cause: errors.Join(ctx.Err(), cause)}
	case isTimeout(err):
		return &failure{rule: ruleByFailure[FailTimeout], reason: string(FailTimeout), cause: cause}
	default:
		return &failure{rule: ruleByFailure[FailNetwork], reason: string(FailNetwork), cause: cause}
	}
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// parseRateLimit reads the three X-Bapi-Limit* headers (header names are
// case-insensitive; http.Header.Get canonicalises them).
func parseRateLimit(h http.Header) RateLimit {
	var rl RateLimit
	if v, err := strconv.Atoi(strings.TrimSpace(h.Get("X-Bapi-Limit"))); err == nil {
		rl.Limit = v
	}
	if v, err := strconv.Atoi(strings.TrimSpace(h.Get("X-Bapi-Limit-Status"))); err == nil {
		rl.Remaining = v
	}
	if v, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Bapi-Limit-Reset-Timestamp")), 10, 64); err == nil && v > 0 {
		rl.Reset = time.UnixMilli(v).UTC()
	}
	return rl
}

// sendGuardKey is the context key of WithSendGuard.
type sendGuardKey struct{}

// WithSendGuard returns ctx carrying guard: every write (a POST) made with
// the context calls it once its timestamp is fixed, just before the
// request leaves. A non-nil answer stops the write: nothing is sent and the
// call fails with that error, classified WriteNotSent. A cluster shard's
// owner guards its writes with its lock, so that no write leaves once the
// lock may have passed to another member (docs/cluster.md, D198).
func WithSendGuard(ctx context.Context, guard func() *messages.Error) context.Context {
	return context.WithValue(ctx, sendGuardKey{}, guard)
}
