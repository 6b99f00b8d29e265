package risk

import (
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

// checkCategory: spot or linear.
func checkCategory(c messages.Category) *messages.Error {
	if c != messages.CategoryLinear && c != messages.CategorySpot {
		return messages.InvalidParams("category", "must be spot or linear")
	}
	return nil
}

// checkLinear: linear only (spot has no positions or leverage); what
// says why.
func checkLinear(c messages.Category, what string) *messages.Error {
	if c == messages.CategorySpot {
		e := messages.InvalidParams("category", what)
		e.Details["reason"] = "linear_only"
		return e
	}
	return checkCategory(c)
}

// checkSymbol: a symbol's shape.
func checkSymbol(s string) *messages.Error {
	if !messages.SymbolRE.MatchString(s) {
		return messages.InvalidParams("symbol", "must be 2-30 of A-Z and 0-9")
	}
	return nil
}

// checkOrderID: the venue's order id.
func checkOrderID(id string) *messages.Error {
	if !messages.OrderIDRE.MatchString(id) {
		return messages.InvalidParams("order_id", "must be the venue's order id (1-64 of A-Z, a-z, 0-9 and '-')")
	}
	return nil
}

// checkKey: an idempotency key, when given.
func checkKey(k string) *messages.Error {
	if k != "" && !messages.IdempotencyKeyRE.MatchString(k) {
		return messages.InvalidParams("idempotency_key", "must be 1-64 of A-Z, a-z, 0-9, '_', '.', ':' and '-'")
	}
	return nil
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
