package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Remote mode: MCP over Streamable HTTP at /mcp. Every request passes, in
// this order and before any MCP processing: a request id, the Host check,
// the Origin check, the bearer token, the per-token rate limit and the body
// limit. Only then is it routed by protocol era to the SDK's handlers; a
// request that opens an older-era session is admitted against the session
// bounds first (httpsessions.go).

// HTTPOptions configures the HTTP front of the MCP server.
type HTTPOptions struct {
	// Authenticate returns the user and token id of a bearer token,
	// checked against the server's state at this request. Required. An
	// error other than permission_denied means the token could not be
	// checked: the request is answered 503, not 401.
	Authenticate func(token string) (user, tokenID string, err error)
	// AllowedHosts are the Host names (without port) accepted besides the
	// loopback names (localhost, 127.0.0.0/8, ::1).
	AllowedHosts []string
	// AllowedOrigins are the exact origins (scheme://host[:port]) accepted
	// in an Origin header besides loopback ones. A request without Origin
	// (a non-browser client) is not checked.
	AllowedOrigins []string
	// RatePerSecond and Burst bound the requests of one token (default 20
	// per second, burst 40).
	RatePerSecond float64
	Burst         int
	// MaxBodyBytes bounds a request body (default 1 MiB): 413 above it.
	MaxBodyBytes int64
	// BodyTimeout bounds the time to send a request body (default 30 s).
	BodyTimeout time.Duration
	// SessionTimeout closes an idle session of an older-era client
	// (default 30 minutes).
	SessionTimeout time.Duration
	// MaxSessionsPerToken and MaxSessions bound the open sessions of
	// older-era clients per bearer token and in all (default
	// DefaultMaxSessionsPerToken and DefaultMaxSessions; httpsessions.go).
	MaxSessionsPerToken, MaxSessions int
	// SessionsRefused journals a count of sessions refused over those
	// bounds, without waiting (nil: not journaled).
	SessionsRefused func(*messages.SessionsRefusedEvent) error
	// Logger gets one line per request (no token, no header values).
	Logger *slog.Logger
	// now is the clock of the rate limiter and the session bounds (tests).
	now func() time.Time
	// seeSessions is given the session bounds' counter (tests).
	seeSessions func(*sessionCaps)
}

// The HTTP limits of remote mode.
const (
	defaultRate         = 20
	defaultBurst        = 40
	defaultMaxBodyBytes = 1 << 20
	// MaxHeaderBytes bounds the request line and headers of one request.
	MaxHeaderBytes = 16 << 10
	// ReadHeaderTimeout bounds the time to send the request line and
	// headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout = 120 * time.Second
	// modernEra is the first protocol version served statelessly.
	modernEra = "2026-07-28"
)

// ModernEra is the first protocol version served by the stateless handler;
// older clients get the stateful one.
const ModernEra = modernEra

// NewHTTPHandler serves srv at /mcp for both protocol eras, behind the
// checks of HTTPOptions. srv must have been built with HTTPPrincipal.
func NewHTTPHandler(srv *sdk.Server, o HTTPOptions) (http.Handler, error) {
	if srv == nil || o.Authenticate == nil {
		return nil, errors.New("mcp: NewHTTPHandler needs a server and Authenticate")
	}
	if o.RatePerSecond <= 0 {
		o.RatePerSecond = defaultRate
	}
	if o.Burst <= 0 {
		o.Burst = defaultBurst
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = defaultMaxBodyBytes
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = 30 * time.Second
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	if o.MaxSessionsPerToken <= 0 {
		o.MaxSessionsPerToken = DefaultMaxSessionsPerToken
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	get := func(*http.Request) *sdk.Server { return srv }
	// Host and Origin are checked before, by rules that know the allowed
	// names; the SDK's own loopback check would refuse an allowed name.
	modern := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		Stateless: true, PropagateRequestCancellation: true, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger,
	})
	legacy := sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{
		SessionTimeout: o.SessionTimeout, DisableLocalhostProtection: true,
		MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger,
	})
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// initialize of an older client has no version header yet.
		if !olderEra(r) {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
	// The SDK reads the principal from auth.TokenInfo (and binds a
	// stateful session to its UserID); its middleware is the only way to
	// set it, so it runs after our check, with a verifier that only reads
	// what our check found.
	withInfo := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		a, ok := ctx.Value(authKey{}).(authenticated)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: a.user, Extra: map[string]any{tokenIDKey: a.tokenID}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(route)

	h := &httpFront{o: o, next: withInfo, limiter: newRateLimiter(o.RatePerSecond, o.Burst, o.now),
		sessions: newSessionCaps(o.MaxSessionsPerToken, o.MaxSessions, o.now, srv, o.SessionsRefused)}
	if o.seeSessions != nil {
		o.seeSessions(h.sessions)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		o.Logger.Info("http request", "request_id", id, "method", r.Method, "path", "(other)", "status", http.StatusNotFound)
		http.Error(w, "not found: MCP is served at /mcp", http.StatusNotFound)
	})
	return mux, nil
}

// NewHTTPServer is the http.Server for remote mode: bounded headers,
// header and idle timeouts. Body timeouts are per request (HTTPOptions).
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// tokenIDKey names the token id in auth.TokenInfo.Extra.
const tokenIDKey = "token_id"

type authKey struct{}

type authenticated struct{ user, tokenID string }

// HTTPPrincipal is the Principal function of an HTTP server: the user
// comes only from the bearer token the front checked (never from
// clientInfo, headers or arguments); profile returns the profile of the
// user's effective policy ("" for a disabled user: every tool is hidden).
func HTTPPrincipal(profile func(ctx context.Context, user string) (string, error)) func(context.Context, sdk.Request) (Principal, error) {
	return func(ctx context.Context, req sdk.Request) (Principal, error) {
		var ti *auth.TokenInfo
		if req != nil && req.GetExtra() != nil {
			ti = req.GetExtra().TokenInfo
		}
		if ti == nil || ti.UserID == "" {
			return Principal{}, errors.New("mcp: a request without an authenticated principal")
		}
		id, _ := ti.Extra[tokenIDKey].(string)
		prof, err := profile(ctx, ti.UserID)
		if err != nil {
			return Principal{}, err
		}
		return Principal{User: ti.UserID, Profile: prof, TokenID: id}, nil
	}
}

// PrincipalFrom returns the principal of the tool call ctx belongs to, as
// the guard identified it.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// olderEra reports whether r goes to the stateful handler: a protocol
// before 2026-07-28 (an older client's initialize carries no version
// header yet).
func olderEra(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") < modernEra
}

// httpFront runs the checks of remote mode before any MCP processing.
type httpFront struct {
	o        HTTPOptions
	next     http.Handler
	limiter  *rateLimiter
	sessions *sessionCaps
}

func (h *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := newRequestID()
	w.Header().Set("X-Request-Id", id)
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	var a authenticated
	defer func() {
		attrs := []any{"request_id", id, "method", r.Method, "path", r.URL.Path, "status", sw.status,
			"duration_ms", time.Since(start).Milliseconds()}
		if a.tokenID != "" {
			attrs = append(attrs, "user", a.user, "token_id", a.tokenID)
		}
		h.o.Logger.Info("http request", attrs...)
	}()
	if !h.hostAllowed(r.Host) {
		http.Error(sw, "misdirected request: this Host is not served (GX_HTTP_ALLOWED_HOSTS)", http.StatusMisdirectedRequest)
		return
	}
	if origin := r.Header.Values("Origin"); len(origin) > 0 && (len(origin) > 1 || !h.originAllowed(origin[0])) {
		http.Error(sw, "forbidden: this Origin is not allowed (GX_HTTP_ALLOWED_ORIGINS)", http.StatusForbidden)
		return
	}
	token, given := bearer(r)
	if given {
		user, tokenID, err := h.o.Authenticate(token)
		if err == nil {
			a = authenticated{user: user, tokenID: tokenID}
		} else if messages.CodeOf(err) != messages.CodePermissionDenied {
			// The token could not be checked (a cluster's shard did not
			// answer): not the client's fault, so not 401 invalid_token.
			sw.Header().Set("Retry-After", "1")
			http.Error(sw, "service unavailable: the token could not be checked right now; retry", http.StatusServiceUnavailable)
			return
		}
	}
	if a.tokenID == "" {
		challenge := `Bearer realm="guarded-exchange"`
		if given {
			challenge += `, error="invalid_token"`
		}
		sw.Header().Set("WWW-Authenticate", challenge)
		http.Error(sw, "unauthorized: a valid bearer token is required (Authorization: Bearer <token>)", http.StatusUnauthorized)
		return
	}
	if wait, ok := h.limiter.allow(a.tokenID); !ok {
		sw.Header().Set("Retry-After", strconv.Itoa(wait))
		http.Error(sw, "too many requests for this token; retry after the Retry-After seconds", http.StatusTooManyRequests)
		return
	}
	if r.Body != nil && r.Method == http.MethodPost {
		// Read the whole (bounded) body under a deadline, so a client that
		// sends slowly cannot hold a handler; then lift the deadline so
		// the answer's stream may last as long as the call.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(h.o.BodyTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(sw, r.Body, h.o.MaxBodyBytes))
		if err != nil {
			// The rest of the body is not read: the connection closes
			// after the answer, and the deadline stays.
			sw.Header().Set("Connection", "close")
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(sw, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(sw, "request body not received in time", http.StatusRequestTimeout)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	r = r.WithContext(context.WithValue(r.Context(), authKey{}, a))
	if olderEra(r) {
		h.sessions.serve(sw, r, a, h.next)
		return
	}
	h.next.ServeHTTP(sw, r)
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", len(vals) > 1
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", true
	}
	return token, true
}

func (h *httpFront) hostAllowed(hostport string) bool {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	return isLoopbackName(host) || slices.ContainsFunc(h.o.AllowedHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

func (h *httpFront) originAllowed(origin string) bool {
	if slices.Contains(h.o.AllowedOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return isLoopbackName(strings.ToLower(u.Hostname()))
}

// isLoopbackName reports whether host is localhost or a loopback address.
func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackListen reports whether a listen address binds loopback only.
func IsLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return isLoopbackName(strings.ToLower(host))
}

// statusWriter remembers the status for the request log. It keeps the
// Flusher and Unwrap the SDK's streams need.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// rateLimiter is a token bucket (golang.org/x/time/rate) per key: a
// bearer token id, or a session for the call limit. Its memory is one
// limiter per key that made a request; keys unused for a minute are
// dropped at the next sweep. The clock is passed to every call, so tests
// can pin it.
type rateLimiter struct {
	mu        sync.Mutex
	rate      float64
	burst     int
	now       func() time.Time
	buckets   map[string]*bucket
	lastSweep time.Time
}

// bucket is one key's limiter and when it was last used.
type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: perSecond, burst: burst, now: now, buckets: map[string]*bucket{}}
}

// allow takes one request from key's bucket, or returns the whole seconds
// to wait before one is available.
func (l *rateLimiter) allow(key string) (int, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastSweep) > time.Minute {
		for k, b := range l.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(l.buckets, k)
			}
		}
		l.lastSweep = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{lim: rate.NewLimiter(rate.Limit(l.rate), l.burst)}
		l.buckets[key] = b
	}
	b.last = now
	if b.lim.AllowN(now, 1) {
		return 0, true
	}
	return int(math.Ceil((1 - b.lim.TokensAt(now)) / l.rate)), false
}

// HTTPBackend wraps b for remote mode: every command a tool sends is
// submitted with the origin of the call's bearer token (role agent,
// channel http, the token id), and only for the token's own user.
// submit is actors.System.Submit.
func HTTPBackend(b Backend, submit func(context.Context, messages.Command, messages.Origin) (any, error)) Backend {
	return httpBackend{Backend: b, submit: submit}
}

type httpBackend struct {
	Backend
	submit func(context.Context, messages.Command, messages.Origin) (any, error)
}

// Handle implements Backend.
func (b httpBackend) Handle(ctx context.Context, cmd messages.Command, origin string) (any, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok || p.TokenID == "" || origin != messages.ActorAgent {
		return nil, messages.Internal(errors.New("mcp: a command without the call's bearer token"))
	}
	if uc, ok := cmd.(messages.UserCommand); ok && uc.TargetUser() != p.User {
		return nil, &messages.Error{Code: messages.CodePermissionDenied, Message: "a token acts only for its own user"}
	}
	return b.submit(ctx, cmd, messages.Origin{Role: messages.RoleAgent, Channel: messages.ChannelHTTP, PeerUID: -1, PeerPID: -1, TokenID: p.TokenID})
}
