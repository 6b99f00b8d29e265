package mcp

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Page cursors of the account list tools (get_positions, get_open_orders,
// get_order_history, get_trades).
//
// A next_cursor is issued by this server, never by the exchange:
//
//	base64url(payload) "." base64url(HMAC-SHA256(k, base64url(payload)))
//
// without padding, where payload is the JSON of cursorPayload: the tool,
// the user, the category, the symbol and the effective window the page was
// read for, and the exchange's own page cursor. k is derived from
// Options.CursorKey (random per server when nil) with a fixed label, so the
// same key used elsewhere cannot mint cursors here.
//
// A cursor handed back is accepted only if it parses, its MAC verifies and
// every bound field equals what the current call asks for; anything else is
// invalid_params on the field "cursor" with one fixed reason, and the
// rejected text is never echoed. The exchange cursor inside is passed to the
// backend unchanged (the venue client checks and escapes it). A cursor
// carries no expiry: the exchange decides whether its own cursor is still
// good.
//
// The payload is authenticated, not encrypted: whoever decodes the base64
// sees the fields, which are all either the caller's own arguments or the
// exchange's opaque page token.

// Size bounds of cursors.
const (
	// maxCursorLen bounds the cursor argument; longer is refused before
	// any decoding.
	maxCursorLen = 2048
	// maxVenueCursorLen bounds the exchange cursor this server will wrap
	// (the venue client refuses longer ones; Bybit's are ~150 bytes).
	maxVenueCursorLen = 1024
	// cursorVersion is the payload version; bump it when the payload
	// changes meaning.
	cursorVersion = 1
	// cursorKeyLabel separates the cursor MAC key from any other use of
	// Options.CursorKey.
	cursorKeyLabel = "guarded-exchange/mcp/page-cursor/v1"
	// cursorReason is the one reason given for every refused cursor.
	cursorReason = "not a cursor this server issued for these arguments"
	// defaultWindow is the window binding of a history read without
	// start_time and end_time (the venue's "last 7 days").
	defaultWindow = "default"
)

// cursorScope is what a cursor is bound to: the call that produced the page.
// Start and End are the effective window (RFC 3339, ms) or "default"; both
// are empty for tools without a window.
type cursorScope struct {
	Tool     string
	User     string
	Category string
	Symbol   string
	Start    string
	End      string
}

// cursorPayload is the signed JSON inside a cursor.
type cursorPayload struct {
	V           int    `json:"v"`
	Tool        string `json:"tool"`
	User        string `json:"user"`
	Category    string `json:"category,omitempty"`
	Symbol      string `json:"symbol,omitempty"`
	Start       string `json:"start,omitempty"`
	End         string `json:"end,omitempty"`
	VenueCursor string `json:"venue_cursor"`
}

// cursorSigner issues and opens cursors. It is immutable after
// construction and safe for concurrent use.
type cursorSigner struct {
	key []byte
}

// newCursorSigner derives the MAC key from key; a nil or empty key means a
// fresh random 32-byte key (cursors then die with the server).
func newCursorSigner(key []byte) *cursorSigner {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic("mcp: no randomness for the cursor key: " + err.Error())
		}
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(cursorKeyLabel))
	return &cursorSigner{key: m.Sum(nil)}
}

func (c *cursorSigner) mac(payload64 string) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(payload64))
	return m.Sum(nil)
}

// venueCursorPattern is what an exchange page token may look like to be
// handed out (Bybit's are URL-encoded key=value lists or base64 text).
var venueCursorPattern = regexp.MustCompile(`^[A-Za-z0-9%=&_.:,+/-]+$`)

// issue wraps the exchange cursor venueCursor for scope. ok is false when
// venueCursor is empty or too long to hand out.
func (c *cursorSigner) issue(scope cursorScope, venueCursor string) (string, bool) {
	// The exchange's cursor travels (base64) inside ours, so only cursors
	// made of the characters page tokens use are wrapped: never free text
	// that a model could decode and read.
	if venueCursor == "" || len(venueCursor) > maxVenueCursorLen || !venueCursorPattern.MatchString(venueCursor) {
		return "", false
	}
	b, err := json.Marshal(cursorPayload{
		V: cursorVersion, Tool: scope.Tool, User: scope.User, Category: scope.Category,
		Symbol: scope.Symbol, Start: scope.Start, End: scope.End, VenueCursor: venueCursor,
	})
	if err != nil {
		return "", false
	}
	p64 := base64.RawURLEncoding.EncodeToString(b)
	out := p64 + "." + base64.RawURLEncoding.EncodeToString(c.mac(p64))
	if len(out) > maxCursorLen {
		return "", false
	}
	return out, true
}

// open returns the exchange cursor inside raw if raw is a cursor this
// server issued for scope. An empty raw means the first page ("", nil).
func (c *cursorSigner) open(raw string, scope cursorScope) (string, *messages.Error) {
	if raw == "" {
		return "", nil
	}
	if len(raw) > maxCursorLen {
		return "", cursorError()
	}
	p64, m64, found := strings.Cut(raw, ".")
	if !found || strings.Contains(m64, ".") {
		return "", cursorError()
	}
	mac, err := base64.RawURLEncoding.DecodeString(m64)
	if err != nil || !hmac.Equal(mac, c.mac(p64)) {
		return "", cursorError()
	}
	b, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		return "", cursorError()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p cursorPayload
	if dec.Decode(&p) != nil || dec.More() {
		return "", cursorError()
	}
	got := cursorScope{Tool: p.Tool, User: p.User, Category: p.Category, Symbol: p.Symbol, Start: p.Start, End: p.End}
	if p.V != cursorVersion || got != scope || p.VenueCursor == "" ||
		len(p.VenueCursor) > maxVenueCursorLen || !utf8.ValidString(p.VenueCursor) {
		return "", cursorError()
	}
	return p.VenueCursor, nil
}

// cursorError is the one refusal for a cursor: it names the field, never
// the value, and says how to get a good one.
func cursorError() *messages.Error {
	e := messages.InvalidParams("cursor", cursorReason)
	e.NextStep = "pass next_cursor exactly as the previous answer gave it, with the same category, symbol, " +
		"start_time and end_time as that call (limit may change); or omit cursor to start from the first page"
	return e
}
