package keys

import (
	"fmt"
	"slices"
	"strings"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Limits on what Check copies from the exchange's answer.
const (
	// MaxNameLen bounds a sanitised permission name, in bytes.
	MaxNameLen = 64
	// MaxListed bounds Verdict.Offending; further offending permissions
	// are only counted in Verdict.More. The key is rejected either way.
	MaxListed = 32
)

// allowlist is docs/invariants.md "Keys": the only permissions a key may carry, by group and
// value of the query-api permissions object.
var allowlist = map[[2]string]bool{
	{"ContractTrade", "Order"}:    true,
	{"ContractTrade", "Position"}: true,
	{"Spot", "SpotTrade"}:         true,
}

// Allowlist returns the permissions a key may carry (docs/invariants.md "Keys"), as
// "Group.Value" names, sorted.
func Allowlist() []string {
	out := make([]string, 0, len(allowlist))
	for gv := range allowlist {
		out = append(out, gv[0]+"."+gv[1])
	}
	slices.Sort(out)
	return out
}

// Permissions is what GET /v5/user/query-api says a key may do.
type Permissions struct {
	// ReadOnly is the query-api readOnly field: true for 1 (read-only),
	// false for 0 (read-write).
	ReadOnly bool `json:"read_only"`
	// Groups is the query-api permissions object, e.g.
	// {"ContractTrade": ["Order", "Position"], "Wallet": []}. Nil and
	// empty arrays mean the group grants nothing.
	Groups map[string][]string `json:"groups"`
}

// Verdict is the result of Check. It is safe to journal: it holds
// permission names (sanitised when they are not on the allowlist), never a
// key or a secret.
type Verdict struct {
	// Accepted is true when the key carries no permission outside the
	// allowlist.
	Accepted bool `json:"accepted"`
	// ReadOnlyCap is true when the key cannot trade: it is read-only, or it
	// carries no allowlisted permission at all. The user must then be
	// capped at the read_only profile.
	ReadOnlyCap bool `json:"read_only_cap"`
	// Granted lists the allowlisted permissions the key carries, as
	// "Group.Value", sorted. On a read-only key they are inert.
	Granted []string `json:"granted"`
	// Offending lists every permission outside the allowlist, sorted by
	// name, at most MaxListed of them. Non-empty means rejected.
	Offending []Offending `json:"offending,omitempty"`
	// More counts offending permissions beyond the first MaxListed.
	More int `json:"more,omitempty"`
}

// Offending is one permission that rejects a key.
type Offending struct {
	// Permission is the sanitised "Group.Value" name, e.g.
	// "Wallet.AccountTransfer": only [A-Za-z0-9._-], at most MaxNameLen
	// bytes; any other character became '_'.
	Permission string `json:"permission"`
	// Why says in a few words why it is refused, e.g. "moves funds".
	Why string `json:"why"`
	// Untick tells the human what to change on Bybit, e.g. "untick Wallet >
	// Account Transfer when editing the key on Bybit".
	Untick string `json:"untick"`
}

// known describes a permission value outside the allowlist: why it is
// refused and how Bybit's key form labels it.
type known struct{ why, label string }

// knownValues covers the values of docs/bybit.md "Account and key endpoints"
var knownValues = map[[2]string]known{
	{"Wallet", "AccountTransfer"}:                   {"moves funds between your accounts", "Wallet > Account Transfer"},
	{"Wallet", "SubMemberTransfer"}:                 {"moves funds between the main account and sub-accounts", "Wallet > Subaccount Transfer"},
	{"Wallet", "SubMemberTransferList"}:             {"moves funds between sub-accounts", "Wallet > Subaccount Transfer"},
	{"Wallet", "Withdraw"}:                          {"withdraws funds from the exchange", "Wallet > Withdrawal"},
	{"Options", "OptionsTrade"}:                     {"trades options, which this server does not guard", "Options > Trade"},
	{"Derivatives", "DerivativesTrade"}:             {"trades derivatives through a permission that is not on the allowlist", "Derivatives > Trade"},
	{"Exchange", "ExchangeHistory"}:                 {"gives access to Convert (coin exchange), which is not on the allowlist", "Exchange > Exchange History"},
	{"Earn", "Earn"}:                                {"moves funds into and out of Earn products", "Earn"},
	{"CopyTrading", "CopyTrading"}:                  {"trades through copy trading, outside the guarded order path", "Copy Trading"},
	{"FiatP2P", "FiatP2POrder"}:                     {"trades on P2P and moves funds", "P2P > Order"},
	{"FiatP2P", "Advertising"}:                      {"posts P2P adverts and moves funds", "P2P > Advertising"},
	{"FiatBitPay", "FaitPayOrder"}:                  {"makes payments and moves funds", "Bybit Pay"},
	{"FiatBybitPay", "FaitPayOrder"}:                {"makes payments and moves funds", "Bybit Pay"},
	{"FiatConvertBroker", "FiatConvertBrokerOrder"}: {"converts fiat and moves funds", "Fiat Convert"},
}

// knownGroups covers the groups of docs/bybit.md "Account and key endpoints", for values not listed in
// knownValues.
var knownGroups = map[string]known{
	"ContractTrade":     {"is not on the allowlist (only Order and Position are)", "Contract"},
	"Spot":              {"is not on the allowlist (only SpotTrade is)", "Spot"},
	"Wallet":            {"moves funds", "Wallet"},
	"Options":           {"trades options, which this server does not guard", "Options"},
	"Derivatives":       {"trades derivatives through a permission that is not on the allowlist", "Derivatives"},
	"Exchange":          {"gives access to Convert (coin exchange), which is not on the allowlist", "Exchange"},
	"Earn":              {"moves funds into and out of Earn products", "Earn"},
	"CopyTrading":       {"trades through copy trading, outside the guarded order path", "Copy Trading"},
	"BlockTrade":        {"trades block trades, outside the guarded order path", "Block Trade"},
	"NFT":               {"trades NFTs, outside the guarded order path", "NFT"},
	"Affiliate":         {"is not needed for trading", "Affiliate"},
	"FiatP2P":           {"trades on P2P and moves funds", "P2P"},
	"FiatBitPay":        {"makes payments and moves funds", "Bybit Pay"},
	"FiatBybitPay":      {"makes payments and moves funds", "Bybit Pay"},
	"FiatConvertBroker": {"converts fiat and moves funds", "Fiat Convert"},
	"FiatGlobalPay":     {"makes payments and moves funds", "Global Pay"},
	"BitCard":           {"spends funds by card", "Card"},
	"ByXPost":           {"is not needed for trading", "ByXPost"},
}

// unknownWhy is the reason for a permission this server has never heard of.
const unknownWhy = "is unknown to this server; only ContractTrade.Order, ContractTrade.Position and Spot.SpotTrade are allowed"

// Check applies the allowlist of docs/invariants.md "Keys" to a key's permissions.
//
//   - Every non-empty group value must be ContractTrade.Order,
//     ContractTrade.Position or Spot.SpotTrade. Anything else, including an
//     unknown group or value, is offending and rejects the key. Empty
//     arrays grant nothing and are fine.
//   - A read-only key is accepted and capped (its trade permissions are
//     inert) unless it carries an offending permission.
//   - A read-write key with no allowlisted permission is accepted and
//     capped: it cannot trade.
//
// Check is pure and safe for concurrent use; it does not modify info.
func Check(info Permissions) Verdict {
	granted := map[string]bool{}
	offending := map[string]Offending{}
	for group, values := range info.Groups {
		for _, value := range values {
			if allowlist[[2]string{group, value}] {
				granted[group+"."+value] = true
				continue
			}
			o := describe(group, value)
			if _, dup := offending[o.Permission]; !dup {
				offending[o.Permission] = o
			}
		}
	}
	v := Verdict{
		Accepted:    len(offending) == 0,
		ReadOnlyCap: info.ReadOnly || len(granted) == 0,
		Granted:     make([]string, 0, len(granted)),
	}
	for g := range granted {
		v.Granted = append(v.Granted, g)
	}
	slices.Sort(v.Granted)
	names := make([]string, 0, len(offending))
	for n := range offending {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > MaxListed {
		v.More = len(names) - MaxListed
		names = names[:MaxListed]
	}
	for _, n := range names {
		v.Offending = append(v.Offending, offending[n])
	}
	return v
}

// describe builds the Offending entry for one permission outside the
// allowlist. Only sanitised text from the exchange reaches it.
func describe(group, value string) Offending {
	name := Sanitize(group + "." + value)
	if k, ok := knownValues[[2]string{group, value}]; ok {
		return Offending{Permission: name, Why: k.why, Untick: untick(k.label)}
	}
	if k, ok := knownGroups[group]; ok {
		return Offending{Permission: name, Why: k.why, Untick: untick(k.label + " > " + Sanitize(value))}
	}
	return Offending{Permission: name, Why: unknownWhy, Untick: untick("the permission Bybit reports as " + name)}
}

// untickPrefix and untickSuffix frame every Offending.Untick; Verdict.Error
// strips them to list the labels in one next step.
const (
	untickPrefix = "untick "
	untickSuffix = " when editing the key on Bybit"
)

func untick(label string) string { return untickPrefix + label + untickSuffix }

// Sanitize makes a name from the exchange safe to show: every character
// outside [A-Za-z0-9._-] becomes '_', and the result is cut to MaxNameLen
// bytes.
func Sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= MaxNameLen {
			break
		}
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Error returns nil for an accepted key, else a *messages.Error with code
// permission_denied whose message names each offending permission (up to
// MaxListed), whose next_step says what to untick on Bybit, and whose
// details are {"offending": [Offending...]} (plus "more": n when the list
// was cut).
func (v Verdict) Error() *messages.Error {
	if v.Accepted {
		return nil
	}
	parts := make([]string, 0, len(v.Offending))
	steps := make([]string, 0, len(v.Offending))
	seen := map[string]bool{}
	for _, o := range v.Offending {
		parts = append(parts, o.Permission+": "+o.Why)
		if !seen[o.Untick] {
			seen[o.Untick] = true
			steps = append(steps, strings.TrimSuffix(strings.TrimPrefix(o.Untick, untickPrefix), untickSuffix))
		}
	}
	msg := "the exchange key carries permissions outside the allowlist: " + strings.Join(parts, "; ")
	if v.More > 0 {
		msg += fmt.Sprintf("; and %d more", v.More)
	}
	details := map[string]any{"offending": v.Offending}
	if v.More > 0 {
		details["more"] = v.More
	}
	next := "edit the key on Bybit (API management) and untick: " + strings.Join(steps, "; ") +
		"; keep only Contract > Orders, Contract > Positions and Spot > Trade, then add the key again"
	if len(v.Offending) == 0 {
		// A hand-built Verdict that is neither accepted nor explained.
		msg = "the exchange key carries permissions outside the allowlist"
		next = "edit the key on Bybit (API management) to keep only Contract > Orders, Contract > Positions and Spot > Trade, then add the key again"
		details["offending"] = []Offending{}
	}
	return &messages.Error{
		Code:     messages.CodePermissionDenied,
		Message:  msg,
		NextStep: next,
		Details:  details,
	}
}
