package venue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// flexNum is a JSON value that the venue sends as a number and recorded
// samples (ccxt) send as a numeric string: retCode, time, ts, u, seq. It
// keeps the text; null and absence leave it unset.
type flexNum struct {
	text string
	set  bool
}

// UnmarshalJSON accepts a JSON number, a JSON string or null.
func (f *flexNum) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = flexNum{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexNum{text: s, set: true}
		return nil
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("venue: expected a number or a numeric string")
		}
		*f = flexNum{text: n.String(), set: true}
		return nil
	}
}

// Int64 parses the value as a decimal integer. An unset value or "" is an
// error.
func (f flexNum) Int64() (int64, error) {
	if !f.set || f.text == "" {
		return 0, errors.New("venue: integer missing")
	}
	return strconv.ParseInt(f.text, 10, 64)
}

// millis parses a millisecond timestamp; unset, "" and "0" give the zero time.
func (f flexNum) millis() (time.Time, error) {
	if !f.set || f.text == "" || f.text == "0" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(f.text, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms).UTC(), nil
}

// fieldDecoder collects the first parse error while decoding a venue
// object, so a parser reads as a list of assignments.
type fieldDecoder struct {
	err error
}

// Bounds of every decimal the venue sends (prices, quantities, PnL,
// balances): no real amount needs more, and a value past them (200,000
// digits, an exponent of a million) would make every answer and record
// that shows it as large.
const (
	// maxDecimalText is the longest decimal text accepted.
	maxDecimalText = 64
	// maxIntegerDigits is the most digits before the point.
	maxIntegerDigits = 24
	// maxFractionDigits is the most significant digits after the point.
	maxFractionDigits = 18
)

// dec parses a decimal string; "" is zero (unset). A text longer than
// maxDecimalText, or a value with more than maxIntegerDigits before the
// point or maxFractionDigits significant digits after it, is an error of
// the field.
func (d *fieldDecoder) dec(name, s string) decimal.Decimal {
	if s == "" {
		return decimal.Decimal{}
	}
	if len(s) > maxDecimalText {
		d.fail(fmt.Errorf("field %s: decimal too long", name))
		return decimal.Decimal{}
	}
	v, err := decimal.NewFromString(s)
	if err != nil {
		d.fail(fmt.Errorf("field %s: not a decimal", name))
		return decimal.Decimal{}
	}
	if !decimalInBounds(v) {
		d.fail(fmt.Errorf("field %s: decimal out of range", name))
		return decimal.Decimal{}
	}
	return v
}

// maxLevelText is the longest order book figure accepted.
const maxLevelText = 8192

// levelNum parses an order book level's figure. A book is a list the
// server shows in part: a level whose figure is out of bounds is kept,
// and get_orderbook leaves it out of its answer (counted as omitted)
// instead of failing the whole book; only a text longer than
// maxLevelText or not a decimal is an error.
func (d *fieldDecoder) levelNum(name string, f flexNum) decimal.Decimal {
	if !f.set || f.text == "" {
		return decimal.Decimal{}
	}
	if len(f.text) > maxLevelText {
		d.fail(fmt.Errorf("field %s: decimal too long", name))
		return decimal.Decimal{}
	}
	v, err := decimal.NewFromString(f.text)
	if err != nil {
		d.fail(fmt.Errorf("field %s: not a decimal", name))
	}
	return v
}

// decimalInBounds reports whether v has at most maxIntegerDigits before
// the point and maxFractionDigits significant digits after it.
func decimalInBounds(v decimal.Decimal) bool {
	if v.IsZero() {
		return true
	}
	if int64(v.NumDigits())+int64(v.Exponent()) > maxIntegerDigits {
		return false
	}
	return v.Exponent() >= -maxFractionDigits || v.Equal(v.Truncate(maxFractionDigits))
}

// Bounds of the text fields of a venue row (ids, symbols, enum-like
// fields, reasons): every store of rows the server keeps (the stream's
// recent orders, its events, the user's inbox and cache, a venue_update)
// is bounded by a count of rows, so each row's text must be bounded too.
// Bybit's own fields are shorter (an order or execution id is a UUID, a
// client order id at most 36 characters, a status a word); text fields
// get room for a venue's odd text, which the answers show fenced as
// untrusted text, rather than refusing the whole answer for it.
const (
	// maxIDText bounds an order id or an execution id.
	maxIDText = 64
	// maxShortText bounds a symbol, a client order id, a coin and an
	// enum-like field (status, side, order type, time in force, stop
	// order type, execution type, fee currency).
	maxShortText = 128
	// maxReasonText bounds a free text such as a reject reason (answers
	// show at most the start of it, fenced).
	maxReasonText = 1024
)

// text is a text field of a venue row, at most max bytes: a longer one is
// an error of the field (the row is malformed), never kept.
func (d *fieldDecoder) text(name, s string, max int) string {
	if len(s) > max {
		d.fail(fmt.Errorf("field %s: text too long", name))
		return ""
	}
	return s
}

// fail keeps the first error.
func (d *fieldDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// decNum is dec for a flexNum.
func (d *fieldDecoder) decNum(name string, f flexNum) decimal.Decimal {
	if !f.set {
		return decimal.Decimal{}
	}
	return d.dec(name, f.text)
}

// ms parses a millisecond timestamp given as a string or number.
func (d *fieldDecoder) ms(name string, f flexNum) time.Time {
	t, err := f.millis()
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %s: not a millisecond timestamp", name)
	}
	return t
}

// int parses an integer given as a string or number; unset or "" is 0.
func (d *fieldDecoder) int(name string, f flexNum) int64 {
	if !f.set || f.text == "" {
		return 0
	}
	v, err := f.Int64()
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("field %s: not an integer", name)
	}
	return v
}
