package risk

import (
	"slices"
	"strconv"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/shopspring/decimal"
)

// firstError is the first non-nil error of errs.
func firstError(errs ...*messages.Error) *messages.Error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// A tool's Validate is the one check of its arguments' values (D140):
// the channel only decoded them (JSON types, decimal strings, presence).
// It checks each field's own form first, in the order the tool's fields
// are listed (symbol, category, side, order type, order id, key), then
// the rules of the tool (linear only, positive values, prices, one of
// two levels), so that of several faults the agent is told the one it
// was always told first. The reasons are the words the agent sees.

// checkCategory: spot or linear.
func checkCategory(c messages.Category) *messages.Error {
	return checkOneOf("category", string(c), string(messages.CategorySpot), string(messages.CategoryLinear))
}

// checkLinear: linear only (spot has no positions or leverage); what
// says why. The category's form is checkCategory's.
func checkLinear(c messages.Category, what string) *messages.Error {
	if c == messages.CategorySpot {
		e := messages.InvalidParams("category", what)
		e.Details["reason"] = "linear_only"
		return e
	}
	return nil
}

// checkOneOf: v is one of allowed, named as a JSON enum is.
func checkOneOf(field, v string, allowed ...string) *messages.Error {
	if slices.Contains(allowed, v) {
		return nil
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = strconv.Quote(a)
	}
	return messages.InvalidParams(field, "must be one of "+strings.Join(quoted, ", "))
}

// checkSymbol: a symbol's shape.
func checkSymbol(s string) *messages.Error {
	return checkIf(!messages.SymbolRE.MatchString(s), "symbol", messages.SymbolReason)
}

// checkOrderID: the venue's order id.
func checkOrderID(id string) *messages.Error {
	return checkIf(!messages.OrderIDRE.MatchString(id), "order_id", "must be the order_id of get_open_orders")
}

// checkKey: an idempotency key, when given ("" is none).
func checkKey(k string) *messages.Error {
	return checkIf(k != "" && !messages.IdempotencyKeyRE.MatchString(k), "idempotency_key", messages.IdempotencyKeyReason)
}

// checkOneOrBoth: at least one of two optional values is given (the
// first field is named when neither is), and each one given is positive
// (positive is the reason when it is not).
func checkOneOrBoth(first string, a decimal.NullDecimal, second string, b decimal.NullDecimal, positive string) *messages.Error {
	return firstError(checkIf(!a.Valid && !b.Valid, first, "give "+first+", "+second+" or both"),
		checkIf(a.Valid && !a.Decimal.IsPositive(), first, positive),
		checkIf(b.Valid && !b.Decimal.IsPositive(), second, positive))
}

// checkIf is an invalid_params of field when bad holds.
func checkIf(bad bool, field, reason string) *messages.Error {
	if bad {
		return messages.InvalidParams(field, reason)
	}
	return nil
}
