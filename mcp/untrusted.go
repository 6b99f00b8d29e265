package mcp

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Exchange text in account answers (docs/invariants.md, docs/errors.md).
//
// The exchange is untrusted: any string it returns could carry text aimed at
// the model. The account tools therefore show a row only through fields
// that pass a strict check (rowCheck): a symbol matching ^[A-Z0-9]{2,30}$,
// a side, order type, status or time in force from Bybit's closed enums,
// an order or execution id that is a UUID or at most 24 digits, a coin
// matching ^[A-Z0-9]{1,20}$, decimals of bounded size rendered by this
// server as strings, and times rendered by this server as RFC 3339 UTC. A
// row with any field that fails its check is "unrepresentable": it is not
// shown, only counted in the answer's omitted.
//
// Free text that is legitimately part of a row (the client order id, a
// reject reason, an exec type or fee currency outside the known set) is
// collected into ONE top-level untrusted_text string of numbered entries,
//
//	[1] client_order_id: "gx-0c1f..."
//	[2] reject_reason: "EC_PostOnlyWillTakeLiquidity"
//
// and the row points at its entry by number (client_order_id_ref: 1,
// reject_reason_ref: 2, exec_type_ref, fee_currency_ref). Each text is cut
// to untrustedEntryMax characters and quoted with strconv.QuoteToASCII, so
// it cannot forge an entry boundary or hide control or bidi characters.
// Entries past untrustedBudget are left out (the row then has no ref) and
// counted in a last line. Nothing the exchange chose appears anywhere else
// in a structured result: not in a row, not in notice, not in an error's
// message or next_step.

// Budgets of untrusted_text.
const (
	// untrustedBudget bounds untrusted_text, in bytes.
	untrustedBudget = 4000
	// untrustedEntryMax bounds one entry's text, in characters, before
	// quoting (Bybit's client order ids are at most 36).
	untrustedEntryMax = messages.UntrustedEntryMax
	// maxDecimalLen bounds a rendered decimal; a longer one makes its row
	// unrepresentable.
	maxDecimalLen = messages.MaxAnswerDecimalLen
)

// untrustedText collects the exchange text of one answer. The zero value is
// ready to use.
type untrustedText struct {
	b       strings.Builder
	n       int
	dropped int
}

// add records text as the next entry and returns its number, or 0 when
// text is empty or the budget is spent (the row then carries no ref).
func (u *untrustedText) add(field, text string) int {
	if text == "" {
		return 0
	}
	entry := messages.UntrustedEntry(u.n+1, field, text) + "\n"
	if u.b.Len()+len(entry) > untrustedBudget {
		u.dropped++
		return 0
	}
	u.n++
	u.b.WriteString(entry)
	return u.n
}

// untrustedMark is where an untrustedText stood (mark), to undo the
// entries of a row that is then left out (rollback).
type untrustedMark struct{ size, n, dropped int }

func (u *untrustedText) mark() untrustedMark {
	return untrustedMark{size: u.b.Len(), n: u.n, dropped: u.dropped}
}

// rollback forgets the entries added since m.
func (u *untrustedText) rollback(m untrustedMark) {
	if u.b.Len() != m.size {
		kept := u.b.String()[:m.size]
		u.b.Reset()
		u.b.WriteString(kept)
	}
	u.n, u.dropped = m.n, m.dropped
}

// String is the untrusted_text value ("" when nothing was collected).
func (u *untrustedText) String() string {
	s := strings.TrimSuffix(u.b.String(), "\n")
	if u.dropped > 0 {
		if s != "" {
			s += "\n"
		}
		s += "(" + strconv.Itoa(u.dropped) + " more entries left out to keep the answer small)"
	}
	return s
}

// Patterns and enums of the fields a row may show: Bybit's own values,
// the same the trading answers are checked against (messages.Fencer).
var (
	venueIDPattern = messages.VenueOrderIDRE
	coinPattern    = regexp.MustCompile(`^[A-Z0-9]{1,20}$`)

	sides         = messages.Sides
	orderStatuses = messages.OrderStatuses
	orderTypes    = messages.OrderTypes
	timeInForces  = messages.TimeInForces
	// execTypes are Bybit's execType values (docs/bybit.md "Trade endpoints").
	execTypes = []string{"Trade", "AdlTrade", "Funding", "BustTrade", "Delivery", "Settle", "BlockTrade",
		"MovePosition", "FutureSpread", "CorporateAction", "UNKNOWN"}
)

// rowCheck renders the fields of one row and remembers whether any failed
// its check. Each method returns "" for a failed field; the caller drops
// the row when bad is set.
type rowCheck struct {
	bad bool
}

// match requires s to match re.
func (r *rowCheck) match(re *regexp.Regexp, s string) string {
	if !re.MatchString(s) {
		r.bad = true
		return ""
	}
	return s
}

// optMatch is match for a field that may be empty.
func (r *rowCheck) optMatch(re *regexp.Regexp, s string) string {
	if s == "" {
		return ""
	}
	return r.match(re, s)
}

// oneOf requires s to be one of allowed.
func (r *rowCheck) oneOf(allowed []string, s string) string {
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	r.bad = true
	return ""
}

// optOneOf is oneOf for a field that may be empty.
func (r *rowCheck) optOneOf(allowed []string, s string) string {
	if s == "" {
		return ""
	}
	return r.oneOf(allowed, s)
}

// decimalFits reports whether d prints as a plain decimal of at most
// maxDecimalLen characters (messages.DecimalFits).
func decimalFits(d decimal.Decimal) bool { return messages.DecimalFits(d) }

// dec renders d as a plain decimal string of at most maxDecimalLen.
func (r *rowCheck) dec(d decimal.Decimal) string {
	if !decimalFits(d) {
		r.bad = true
		return ""
	}
	return d.String()
}

// optDec is dec with zero rendered as "" (the field is then omitted).
func (r *rowCheck) optDec(d decimal.Decimal) string {
	if d.IsZero() {
		return ""
	}
	return r.dec(d)
}

// time renders t as RFC 3339 UTC; the zero time is "" (omitted), a year
// outside 1970..9999 fails.
func (r *rowCheck) time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if y := t.UTC().Year(); y < 1970 || y > 9999 {
		r.bad = true
		return ""
	}
	return rfc3339(t)
}
