package venue

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Failure names a failure that is not a retCode or an HTTP status: what went
// wrong on the way to or from the venue. Failure values appear in error
// details as "reason".
type Failure string

// Failures recognised by the error table.
const (
	// FailNetwork: the connection failed or broke (dial, reset, EOF).
	FailNetwork Failure = "transport"
	// FailTimeout: the HTTP client's timeout (or a network timeout) expired.
	FailTimeout Failure = "timeout"
	// FailCanceled: the caller's context was cancelled or its deadline passed.
	FailCanceled Failure = "canceled"
	// FailNonJSON: the body was not the JSON envelope (proxy page, HTML, truncated).
	FailNonJSON Failure = "non_json"
	// FailUnexpectedStatus: an HTTP status the table does not name, without a
	// JSON envelope (3xx, 418 ...).
	FailUnexpectedStatus Failure = "http_status"
	// FailMalformedResult: retCode 0 but the result could not be decoded.
	FailMalformedResult Failure = messages.ReasonMalformedResult
	// FailNoKey: a signed call was attempted without an API key and secret.
	FailNoKey Failure = "no_key"
)

// Reasons for failures that come from the venue's answer rather than the
// transport; they also appear in details as "reason".
const (
	reasonRetCode    = "ret_code"
	reasonHTTPStatus = "http_status"
)

// retryAfterMode says how RetryAfterS is computed for a row.
type retryAfterMode int

const (
	retryAfterNone        retryAfterMode = iota
	retryAfterResetHeader                // ceil(X-Bapi-Limit-Reset-Timestamp − now), ≥ 1 s, 2 s without header
	retryAfterIPBan                      // fixed 600 s (Bybit: wait ≥ 10 min)
)

// ipBanRetryAfterS is how long to wait after an HTTP 403 IP ban (docs/bybit.md "Envelope and rate limits").
const ipBanRetryAfterS = 600

// noHeaderRetryAfterS is the wait when a rate-limit answer has no reset header.
const noHeaderRetryAfterS = 2

// errorRule is one row of the mapping from what the venue answered to a
// docs/errors.md code. A row matches by retCode, by HTTP status, by HTTP status
// class (5xx) or by transport failure; the Default row matches every
// non-zero retCode no other row names.
type errorRule struct {
	// Name identifies the row in tests and docs/venue-errors.md.
	Name         string
	RetCodes     []int
	HTTPStatuses []int
	HTTP5xx      bool
	Failures     []Failure
	Default      bool

	// ReadCode is the code for GET, WriteCode for POST.
	ReadCode  messages.Code
	WriteCode messages.Code
	// RetryRead: a GET is retried with backoff (writes are never retried).
	RetryRead  bool
	RetryAfter retryAfterMode
	// Message and NextStep are ours; exchange text never goes here.
	Message       string
	NextStep      string
	WriteMessage  string // if set, replaces Message for writes
	WriteNextStep string // if set, replaces NextStep for writes
}

const nextStepKeys = "add or replace the exchange key with `guarded-exchange keys add` (a human does this outside the chat), then call again"

// errorTable is THE mapping (docs/venue-errors.md, docs/errors.md). Keep it in step with
// docs/venue-errors.md; TestErrorTable has one case per row.
var errorTable = []errorRule{
	{
		Name:         "rate_limit",
		RetCodes:     []int{10006, 170222},
		HTTPStatuses: []int{429},
		ReadCode:     messages.CodeRateLimited, WriteCode: messages.CodeRateLimited,
		RetryAfter: retryAfterResetHeader,
		Message:    "the exchange rate limit was hit; the request was not processed",
		NextStep:   "wait retry_after_s seconds, then call again",
	},
	{
		Name:         "ip_ban",
		HTTPStatuses: []int{403},
		ReadCode:     messages.CodeRateLimited, WriteCode: messages.CodeRateLimited,
		RetryAfter: retryAfterIPBan,
		Message:    "the exchange refused this host (IP rate-limit ban or region block); the request was not processed",
		NextStep:   "stop calling the exchange for at least 10 minutes; if it persists, the operator should check the host's IP and region",
	},
	{
		Name:         "credentials",
		RetCodes:     []int{10003, 10004, 10007, 10010, 33004, -2015},
		HTTPStatuses: []int{401},
		Failures:     []Failure{FailNoKey},
		ReadCode:     messages.CodeExchangeCredentialsInvalid, WriteCode: messages.CodeExchangeCredentialsInvalid,
		Message:  "the exchange did not accept the API key (invalid, expired, wrong environment, bad signature or IP not bound)",
		NextStep: nextStepKeys,
	},
	{
		Name:     "permission",
		RetCodes: []int{10005},
		ReadCode: messages.CodeExchangeCredentialsInvalid, WriteCode: messages.CodeExchangeCredentialsInvalid,
		Message:  "the exchange key lacks a permission for this call",
		NextStep: nextStepKeys,
	},
	{
		Name:     "clock",
		RetCodes: []int{10002},
		ReadCode: messages.CodeExchangeUnavailable, WriteCode: messages.CodeExchangeUnavailable,
		Message:  "the exchange refused the request timestamp (outside the receive window); the request was not processed",
		NextStep: "the operator should check that the server host's clock is synchronised (NTP), then call again",
	},
	{
		Name:     "transient",
		RetCodes: []int{10000, 10016, 170007, 170032},
		HTTP5xx:  true,
		Failures: []Failure{FailNetwork, FailTimeout, FailCanceled, FailNonJSON},
		ReadCode: messages.CodeExchangeUnavailable, WriteCode: messages.CodeOutcomeUnknown,
		RetryRead:     true,
		Message:       "the exchange could not be reached or failed",
		NextStep:      "retry later",
		WriteMessage:  "the exchange did not give a definite answer; the action may or may not have been applied",
		WriteNextStep: "do not resend; look the order up by its client order id (open orders, then order history)",
	},
	{
		// Reference §11.5: the venue says the request is still being
		// processed or timed out inside; the outcome is unknown.
		Name:      "processing",
		RetCodes:  []int{10019, 110079, 170035, 170144, 170146, 170147, 170149, 170150, 170191, 170212, 170310, 40004},
		ReadCode:  messages.CodeExchangeUnavailable,
		WriteCode: messages.CodeOutcomeUnknown,
		RetryRead: true,
		Message:   "the exchange is still processing a change to this order",
		NextStep:  "retry later",
		WriteMessage: "the exchange accepted the request for processing or timed out internally; " +
			"the action may or may not have been applied",
		WriteNextStep: "do not resend; look the order up by its client order id (open orders, then order history)",
	},
	{
		// Reference §5.1, §11.2/11.3: the client order id is taken. This
		// server sends each id once, so the order it names may be ours
		// (an earlier send whose answer was lost): look it up, never
		// resend and never report "not placed".
		Name:      "duplicate_link_id",
		RetCodes:  []int{110072, 170141},
		ReadCode:  messages.CodeExchangeRejected,
		WriteCode: messages.CodeOutcomeUnknown,
		Message:   "the exchange refused the request",
		NextStep:  "the exchange's reason is in untrusted_text; correct the request before calling again",
		WriteMessage: "an order with this client order id already exists at the exchange; " +
			"it may be this action's order",
		WriteNextStep: "do not resend; look the order up by its client order id (open orders, then order history)",
	},
	{
		Name:      "unexpected_answer",
		Failures:  []Failure{FailUnexpectedStatus, FailMalformedResult},
		ReadCode:  messages.CodeExchangeUnavailable,
		WriteCode: messages.CodeOutcomeUnknown,
		Message:   "the exchange gave an answer this server cannot read",
		NextStep:  "retry later; if it persists, the operator should check the venue URL and the server log",
		WriteMessage: "the exchange gave an answer this server cannot read; " +
			"the action may or may not have been applied",
		WriteNextStep: "do not resend; look the order up by its client order id (open orders, then order history)",
	},
	{
		Name:     "not_found",
		RetCodes: []int{110001, 110008, 110010, 170139, 170142, 170143, 170190, 170213},
		ReadCode: messages.CodeNotFound, WriteCode: messages.CodeNotFound,
		Message:  "the exchange reports that the order does not exist or is already final",
		NextStep: "check the order id; the order may already be filled or cancelled",
	},
	{
		Name:         "rejected",
		HTTPStatuses: []int{400, 404},
		Default:      true,
		ReadCode:     messages.CodeExchangeRejected, WriteCode: messages.CodeExchangeRejected,
		Message:  "the exchange refused the request; nothing was changed",
		NextStep: "the exchange's reason is in untrusted_text; correct the request before calling again",
	},
}

// symbolRefusalRetCodes are refusals that, on a market read whose category
// and symbol already passed validation, can only mean the symbol is not
// listed: Bybit answers an unknown symbol with 10001 ("Not supported
// symbols", "Symbol Is Invalid") and spot with 170121 ("Invalid symbol").
// The market helpers turn them into not_found (docs/venue-errors.md).
var symbolRefusalRetCodes = []int{10001, 170121}

// Lookup indexes built once from errorTable.
var (
	ruleByRetCode = map[int]*errorRule{}
	ruleByStatus  = map[int]*errorRule{}
	ruleByFailure = map[Failure]*errorRule{}
	rule5xx       *errorRule
	ruleDefault   *errorRule
)

func init() {
	for i := range errorTable {
		r := &errorTable[i]
		for _, c := range r.RetCodes {
			if ruleByRetCode[c] != nil {
				panic(fmt.Sprintf("venue: retCode %d in two error rows", c))
			}
			ruleByRetCode[c] = r
		}
		for _, s := range r.HTTPStatuses {
			if ruleByStatus[s] != nil {
				panic(fmt.Sprintf("venue: HTTP %d in two error rows", s))
			}
			ruleByStatus[s] = r
		}
		for _, f := range r.Failures {
			if ruleByFailure[f] != nil {
				panic(fmt.Sprintf("venue: failure %s in two error rows", f))
			}
			ruleByFailure[f] = r
		}
		if r.HTTP5xx {
			rule5xx = r
		}
		if r.Default {
			ruleDefault = r
		}
	}
}

// ruleForRetCode returns the row for a non-zero retCode.
func ruleForRetCode(code int) *errorRule {
	if r := ruleByRetCode[code]; r != nil {
		return r
	}
	return ruleDefault
}

// ruleForStatus returns the row for a non-200 HTTP status, or nil when the
// status is not named (the caller then looks at the body).
func ruleForStatus(status int) *errorRule {
	if r := ruleByStatus[status]; r != nil {
		return r
	}
	if status >= 500 && status <= 599 {
		return rule5xx
	}
	return nil
}

// failure is what went wrong with one attempt, before it becomes a
// *messages.Error. It carries everything the table needs.
type failure struct {
	rule       *errorRule
	reason     string // a Failure value, reasonRetCode or reasonHTTPStatus
	retCode    int    // 0 when not from an envelope
	hasRetCode bool
	httpStatus int // 0 when no response
	retMsg     string
	rateLimit  RateLimit
	cause      error
	// internal is set instead of rule when the request could not even be
	// built; it becomes internal_error.
	internal error
	// refused is set instead of rule when the send guard (WithSendGuard)
	// stopped a write before it left; it becomes that error, not_sent.
	refused *messages.Error
}

// maxUntrustedText bounds the exchange text kept in an error.
const maxUntrustedText = 512

// originStringRE matches the signed string Bybit echoes in a 10004 retMsg
// ("error sign! origin_string[<timestamp><key><recv window><payload>]").
var originStringRE = regexp.MustCompile(`(?s)origin_string\[.*?(\]|$)`)

// sanitizeRetMsg prepares exchange text for UntrustedText: the echoed signed
// string, the key and the secret are cut out, and the length is bounded.
// The text stays untrusted; this only keeps our own material out of it.
func sanitizeRetMsg(msg, apiKey, secret string) string {
	msg = originStringRE.ReplaceAllString(msg, "origin_string[redacted]")
	if secret != "" {
		msg = strings.ReplaceAll(msg, secret, "[redacted]")
	}
	if apiKey != "" {
		msg = strings.ReplaceAll(msg, apiKey, "[api key]")
	}
	if len(msg) > maxUntrustedText {
		msg = strings.ToValidUTF8(msg[:maxUntrustedText], "") + "…"
	}
	return msg
}

// toError builds the *messages.Error for f. now computes retry_after_s.
func (f *failure) toError(write bool, path string, attempts int, now time.Time) *messages.Error {
	r := f.rule
	e := &messages.Error{
		Code:     r.ReadCode,
		Message:  r.Message,
		NextStep: r.NextStep,
		Details: map[string]any{
			"reason":   f.reason,
			"endpoint": path,
		},
		UntrustedText: f.retMsg,
		Err:           f.cause,
	}
	if write {
		e.Code = r.WriteCode
		if r.WriteMessage != "" {
			e.Message = r.WriteMessage
		}
		if r.WriteNextStep != "" {
			e.NextStep = r.WriteNextStep
		}
	}
	if f.hasRetCode {
		e.Details["ret_code"] = f.retCode
	}
	if f.httpStatus != 0 {
		e.Details["http_status"] = f.httpStatus
	}
	if attempts > 1 {
		e.Details["attempts"] = attempts
	}
	switch r.RetryAfter {
	case retryAfterResetHeader:
		e.RetryAfterS = retryAfterSeconds(f.rateLimit.Reset, now)
	case retryAfterIPBan:
		e.RetryAfterS = ipBanRetryAfterS
	}
	if e.Err == nil {
		switch {
		case f.hasRetCode:
			e.Err = fmt.Errorf("venue: %s: retCode %d (HTTP %d)", path, f.retCode, f.httpStatus)
		case f.httpStatus != 0:
			e.Err = fmt.Errorf("venue: %s: HTTP %d (%s)", path, f.httpStatus, f.reason)
		default:
			e.Err = fmt.Errorf("venue: %s: %s", path, f.reason)
		}
	}
	return e
}

// retryAfterSeconds is ceil(reset − now) in whole seconds, at least 1; 2 when
// the venue sent no reset timestamp.
func retryAfterSeconds(reset, now time.Time) int {
	if reset.IsZero() {
		return noHeaderRetryAfterS
	}
	s := int(math.Ceil(reset.Sub(now).Seconds()))
	if s < 1 {
		return 1
	}
	return s
}
