package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Request signing (docs/bybit.md "Signing").
//
// A private request carries X-BAPI-API-KEY, X-BAPI-TIMESTAMP (ms),
// X-BAPI-SIGN and optionally X-BAPI-RECV-WINDOW (ms, default 5000) and
// X-BAPI-SIGN-TYPE ("2", HMAC; absent is accepted). The signed string is
//
//	timestamp + apiKey + recvWindowHeader + payload
//
// where recvWindowHeader is the header's literal value ("" when absent) and
// payload is the raw query string exactly as received (GET) or the raw body
// bytes exactly as received (POST). X-BAPI-SIGN must be the lowercase hex
// HMAC-SHA256 of that string under the key's secret.
//
// Checks, in order: a missing key, timestamp or sign header answers HTTP
// 401; an unknown key 10003; a malformed recv window 10001; a timestamp
// outside now-recvWindow <= ts < now+1000 10002; a wrong signature or
// unsupported sign type 10004.

const (
	hdrAPIKey     = "X-BAPI-API-KEY"
	hdrTimestamp  = "X-BAPI-TIMESTAMP"
	hdrSign       = "X-BAPI-SIGN"
	hdrRecvWindow = "X-BAPI-RECV-WINDOW"
	hdrSignType   = "X-BAPI-SIGN-TYPE"

	defaultRecvWindow = 5000
	maxClockAheadMs   = 1000
)

// sign returns the lowercase hex HMAC-SHA256 of payload under secret.
func sign(secret, payload string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(payload))
	return hex.EncodeToString(m.Sum(nil))
}

// restSignPayload is the string a REST request signs.
func restSignPayload(timestamp, apiKey, recvWindow, payload string) string {
	return timestamp + apiKey + recvWindow + payload
}

// wsAuthPayload is the string a private WebSocket auth signs.
func wsAuthPayload(expires string) string { return "GET/realtime" + expires }

// recvWindowMessage is Bybit's 10002 text.
func recvWindowMessage(ts, now, window int64) string {
	return fmt.Sprintf("invalid request, please check your server timestamp or recv_window param. req_timestamp[%d],server_timestamp[%d],recv_window[%d]", ts, now, window)
}

// authenticate checks a private request. It returns a non-zero HTTP status
// for a refusal that is not HTTP 200, a response with a non-zero code for a
// business refusal, or the key.
func (s *Sim) authenticate(c *call) (status int, resp response, key *apiKey) {
	h := c.r.Header
	apiKeyV, tsV, signV := h.Get(hdrAPIKey), h.Get(hdrTimestamp), h.Get(hdrSign)
	var missing []string
	for _, p := range [][2]string{{hdrAPIKey, apiKeyV}, {hdrTimestamp, tsV}, {hdrSign, signV}} {
		if p[1] == "" {
			missing = append(missing, p[0])
		}
	}
	if len(missing) > 0 {
		return http.StatusUnauthorized, fail(codeInvalidKey, "missing auth header: "+strings.Join(missing, ", ")), nil
	}

	key = s.lookupKey(apiKeyV)
	if key == nil {
		return 0, fail(codeInvalidKey, "API key is invalid."), nil
	}

	rwV := h.Get(hdrRecvWindow)
	window := int64(defaultRecvWindow)
	if rwV != "" {
		w, err := strconv.ParseInt(rwV, 10, 64)
		if err != nil || w <= 0 {
			return 0, fail(codeParams, "params error: invalid X-BAPI-RECV-WINDOW "+strconv.Quote(rwV)), nil
		}
		window = w
	}

	nowMs := c.now.UnixMilli()
	ts, err := strconv.ParseInt(tsV, 10, 64)
	if err != nil {
		return 0, fail(codeRecvWindow, "invalid request, please check your server timestamp or recv_window param. req_timestamp["+tsV+"],server_timestamp["+itoa(nowMs)+"],recv_window["+itoa(window)+"]"), nil
	}
	// A client signs with its own clock, which POST /sim/clock does not
	// move; one that synchronised with /v5/market/time follows the
	// simulated clock. Either is accepted.
	inWindow := func(now int64) bool { return ts >= now-window && ts < now+maxClockAheadMs }
	if !inWindow(nowMs) && (c.wall.IsZero() || !inWindow(c.wall.UnixMilli())) {
		return 0, fail(codeRecvWindow, recvWindowMessage(ts, nowMs, window)), nil
	}

	if st := h.Get(hdrSignType); st != "" && st != "2" {
		return 0, fail(codeSign, "error sign! sign type "+strconv.Quote(st)+" is not supported, use 2 (HMAC-SHA256)"), nil
	}
	payload := c.r.URL.RawQuery
	if c.r.Method == http.MethodPost {
		payload = string(c.body)
	}
	origin := restSignPayload(tsV, apiKeyV, rwV, payload)
	if !hmac.Equal([]byte(sign(key.secret, origin)), []byte(signV)) {
		return 0, fail(codeSign, "error sign! origin_string["+origin+"]"), nil
	}
	return 0, response{}, key
}
