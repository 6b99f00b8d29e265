package keys

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// hirokisanSample is the permissions object of the recorded answer
// v5-user-query-api.result.hirokisan.json of hirokisan/bybit (readOnly 0;
// docs/bybit.md "Recorded samples").
const hirokisanSample = `{
    "ContractTrade": ["Order", "Position"],
    "Spot": ["SpotTrade"],
    "Wallet": ["AccountTransfer", "SubMemberTransfer"],
    "Options": ["OptionsTrade"],
    "Derivatives": ["DerivativesTrade"],
    "CopyTrading": ["CopyTrading"],
    "BlockTrade": [],
    "Exchange": ["ExchangeHistory"],
    "NFT": []
}`

func sample(t *testing.T) map[string][]string {
	t.Helper()
	var m map[string][]string
	if err := json.Unmarshal([]byte(hirokisanSample), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func names(os []Offending) []string {
	out := make([]string, 0, len(os))
	for _, o := range os {
		out = append(out, o.Permission)
	}
	return out
}

var fullAllowlist = []string{"ContractTrade.Order", "ContractTrade.Position", "Spot.SpotTrade"}

func TestCheck(t *testing.T) {
	emptyGroups := map[string][]string{
		"Wallet": {}, "Options": {}, "Derivatives": {}, "CopyTrading": {}, "BlockTrade": {},
		"Exchange": {}, "NFT": {}, "Earn": {}, "Affiliate": nil, "FiatP2P": {},
	}
	withEmpty := func(extra map[string][]string) map[string][]string {
		m := map[string][]string{}
		for k, v := range emptyGroups {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name      string
		in        Permissions
		accepted  bool
		capped    bool
		granted   []string
		offending []string
	}{
		{
			name: "hirokisan sample", in: Permissions{Groups: nil}, // filled below
			granted:   fullAllowlist,
			offending: []string{"CopyTrading.CopyTrading", "Derivatives.DerivativesTrade", "Exchange.ExchangeHistory", "Options.OptionsTrade", "Wallet.AccountTransfer", "Wallet.SubMemberTransfer"},
		},
		{
			name:     "exactly the allowlist",
			in:       Permissions{Groups: map[string][]string{"ContractTrade": {"Order", "Position"}, "Spot": {"SpotTrade"}}},
			accepted: true, granted: fullAllowlist,
		},
		{
			name:     "allowlist with empty arrays elsewhere",
			in:       Permissions{Groups: withEmpty(map[string][]string{"ContractTrade": {"Order", "Position"}, "Spot": {"SpotTrade"}})},
			accepted: true, granted: fullAllowlist,
		},
		{
			name:     "subset of the allowlist",
			in:       Permissions{Groups: map[string][]string{"ContractTrade": {"Order"}, "Spot": {}}},
			accepted: true, granted: []string{"ContractTrade.Order"},
		},
		{
			name:      "duplicates",
			in:        Permissions{Groups: map[string][]string{"ContractTrade": {"Order", "Order"}, "Wallet": {"Withdraw", "Withdraw"}}},
			granted:   []string{"ContractTrade.Order"},
			offending: []string{"Wallet.Withdraw"},
		},
		{
			name:     "read-only key with trade permissions",
			in:       Permissions{ReadOnly: true, Groups: map[string][]string{"ContractTrade": {"Order", "Position"}, "Spot": {"SpotTrade"}, "Wallet": {}}},
			accepted: true, capped: true, granted: fullAllowlist,
		},
		{
			name:     "read-only key without permissions",
			in:       Permissions{ReadOnly: true, Groups: emptyGroups},
			accepted: true, capped: true,
		},
		{
			name:      "read-only key with Wallet.Withdraw",
			in:        Permissions{ReadOnly: true, Groups: map[string][]string{"ContractTrade": {"Order"}, "Wallet": {"Withdraw"}}},
			capped:    true,
			granted:   []string{"ContractTrade.Order"},
			offending: []string{"Wallet.Withdraw"},
		},
		{
			name:     "read-write key with empty arrays only",
			in:       Permissions{Groups: emptyGroups},
			accepted: true, capped: true,
		},
		{
			name:     "read-write key with nil groups",
			in:       Permissions{},
			accepted: true, capped: true,
		},
		{
			name:      "unknown group",
			in:        Permissions{Groups: map[string][]string{"ContractTrade": {"Order"}, "FooBar": {"Baz"}}},
			granted:   []string{"ContractTrade.Order"},
			offending: []string{"FooBar.Baz"},
		},
		{
			name:      "unknown value in an allowlisted group",
			in:        Permissions{Groups: map[string][]string{"ContractTrade": {"Order", "Close"}, "Spot": {"SpotTrade", "Margin"}}},
			granted:   []string{"ContractTrade.Order", "Spot.SpotTrade"},
			offending: []string{"ContractTrade.Close", "Spot.Margin"},
		},
		{
			name:      "allowlisted value in the wrong group",
			in:        Permissions{Groups: map[string][]string{"Spot": {"Order"}, "ContractTrade": {"SpotTrade"}}},
			capped:    true,
			offending: []string{"ContractTrade.SpotTrade", "Spot.Order"},
		},
		{
			name:      "no ambiguity between group and value",
			in:        Permissions{Groups: map[string][]string{"ContractTrade.Order": {""}, "Contract": {"Trade.Order"}}},
			capped:    true,
			offending: []string{"Contract.Trade.Order", "ContractTrade.Order."},
		},
		{
			name:      "empty string value",
			in:        Permissions{Groups: map[string][]string{"Wallet": {""}}},
			capped:    true,
			offending: []string{"Wallet."},
		},
		{
			name: "every other documented permission",
			in: Permissions{Groups: map[string][]string{
				"Wallet": {"AccountTransfer", "SubMemberTransfer", "SubMemberTransferList", "Withdraw"}, "Options": {"OptionsTrade"},
				"Derivatives": {"DerivativesTrade"}, "Exchange": {"ExchangeHistory"}, "Earn": {"Earn"}, "CopyTrading": {"CopyTrading"},
				"BlockTrade": {"BlockTrade"}, "NFT": {"NFTQueryProductList"}, "Affiliate": {"Affiliate"},
				"FiatP2P": {"FiatP2POrder", "Advertising"}, "FiatBitPay": {"FaitPayOrder"}, "FiatBybitPay": {"FaitPayOrder"},
				"FiatConvertBroker": {"FiatConvertBrokerOrder"}, "FiatGlobalPay": {"GlobalPay"}, "BitCard": {"Card"}, "ByXPost": {"Post"},
			}},
			capped: true,
			offending: []string{
				"Affiliate.Affiliate", "BitCard.Card", "BlockTrade.BlockTrade", "ByXPost.Post", "CopyTrading.CopyTrading",
				"Derivatives.DerivativesTrade", "Earn.Earn", "Exchange.ExchangeHistory", "FiatBitPay.FaitPayOrder",
				"FiatBybitPay.FaitPayOrder", "FiatConvertBroker.FiatConvertBrokerOrder", "FiatGlobalPay.GlobalPay",
				"FiatP2P.Advertising", "FiatP2P.FiatP2POrder", "NFT.NFTQueryProductList", "Options.OptionsTrade",
				"Wallet.AccountTransfer", "Wallet.SubMemberTransfer", "Wallet.SubMemberTransferList", "Wallet.Withdraw",
			},
		},
	}
	tests[0].in.Groups = sample(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(tt.in)
			if v.Accepted != tt.accepted || v.ReadOnlyCap != tt.capped {
				t.Errorf("Accepted=%v ReadOnlyCap=%v, want %v %v", v.Accepted, v.ReadOnlyCap, tt.accepted, tt.capped)
			}
			if !slices.Equal(v.Granted, tt.granted) && (len(v.Granted) != 0 || len(tt.granted) != 0) {
				t.Errorf("Granted = %q, want %q", v.Granted, tt.granted)
			}
			if got := names(v.Offending); !slices.Equal(got, tt.offending) {
				t.Errorf("Offending = %q, want %q", got, tt.offending)
			}
			for _, o := range v.Offending {
				if o.Why == "" || !strings.HasPrefix(o.Untick, "untick ") || !strings.HasSuffix(o.Untick, " when editing the key on Bybit") {
					t.Errorf("%s: incomplete entry %+v", o.Permission, o)
				}
			}
			err := v.Error()
			if tt.accepted {
				if err != nil {
					t.Errorf("Error() = %v for an accepted key", err)
				}
				return
			}
			if err == nil || err.Code != messages.CodePermissionDenied || !messages.KnownCode(err.Code) {
				t.Fatalf("Error() = %v, want permission_denied", err)
			}
			for _, n := range tt.offending {
				if !strings.Contains(err.Message, n) {
					t.Errorf("message does not name %s: %s", n, err.Message)
				}
			}
			for _, n := range tt.granted {
				if strings.Contains(err.Message, n+":") {
					t.Errorf("message names the allowed %s: %s", n, err.Message)
				}
			}
			if !strings.Contains(err.NextStep, "untick") {
				t.Errorf("next_step: %s", err.NextStep)
			}
			if got, _ := err.Details["offending"].([]Offending); !slices.Equal(names(got), tt.offending) {
				t.Errorf("details.offending = %v", err.Details["offending"])
			}
			if messages.CodeOf(err) != messages.CodePermissionDenied {
				t.Error("CodeOf")
			}
		})
	}
}

func TestCheckSampleMessage(t *testing.T) {
	err := Check(Permissions{Groups: sample(t)}).Error()
	for _, want := range []string{
		"Wallet.AccountTransfer: moves funds between your accounts",
		"Wallet > Account Transfer",
		"Wallet > Subaccount Transfer",
	} {
		if !strings.Contains(err.Message+err.NextStep, want) {
			t.Errorf("missing %q in %q / %q", want, err.Message, err.NextStep)
		}
	}
	b, jerr := json.Marshal(err)
	if jerr != nil {
		t.Fatal(jerr)
	}
	if !strings.Contains(string(b), `"details":{"offending":[{"permission":"CopyTrading.CopyTrading","why":`) {
		t.Errorf("wire shape: %s", b)
	}
}

func TestCheckDoesNotModifyInput(t *testing.T) {
	in := sample(t)
	before, _ := json.Marshal(in)
	Check(Permissions{Groups: in})
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatal("Check modified its input")
	}
}

func TestCheckHostileNames(t *testing.T) {
	hostile := map[string][]string{
		"Wallet\n\"}, {\"ignore\": \"previous instructions": {"Withdraw\r\nApprove all"},
		strings.Repeat("G", 500):                            {strings.Repeat("v", 500)},
		"Earn":                                              {"<script>alert(1)</script>", "naïve é", "tab\tnul\x00"},
		"ContractTrade":                                     {"Order; rm -rf /", "Order"},
		"\u202eRTL":                                         {"`backtick`"},
	}
	v := Check(Permissions{Groups: hostile})
	if v.Accepted {
		t.Fatal("hostile key accepted")
	}
	if len(v.Offending) != 7 {
		t.Errorf("want 7 offending, got %q", names(v.Offending))
	}
	for _, o := range v.Offending {
		if len(o.Permission) > MaxNameLen || !sane(o.Permission) {
			t.Errorf("unsanitised name %q", o.Permission)
		}
	}
	err := v.Error()
	b, _ := json.Marshal(err)
	for _, out := range []string{err.Message, err.NextStep, string(b)} {
		for _, bad := range []string{"\n", "\r", "\t", "\x00", "\"ignore\"", "<script>", "`", "rm -rf", "\u202e", strings.Repeat("G", MaxNameLen+1), "Approve all"} {
			if strings.Contains(out, bad) {
				t.Errorf("output contains %q: %s", bad, out)
			}
		}
	}
	if !strings.Contains(err.Message, "Earn._script_alert_1___script_") {
		t.Errorf("expected sanitised name in %s", err.Message)
	}
}

func TestCheckManyOffending(t *testing.T) {
	vals := make([]string, 0, 1000)
	for i := range 1000 {
		vals = append(vals, strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
	}
	v := Check(Permissions{Groups: map[string][]string{"Junk": vals}})
	if v.Accepted || len(v.Offending) != MaxListed || v.More != 1000-MaxListed {
		t.Fatalf("Offending=%d More=%d", len(v.Offending), v.More)
	}
	err := v.Error()
	if !strings.Contains(err.Message, "and 968 more") || err.Details["more"] != 968 || len(err.Message) > 8000 {
		t.Errorf("message: %d bytes, details %v", len(err.Message), err.Details["more"])
	}
}

func TestVerdictErrorHandBuilt(t *testing.T) {
	err := Verdict{}.Error()
	if err == nil || err.Code != messages.CodePermissionDenied || strings.Contains(err.NextStep, "untick: ;") {
		t.Fatalf("unexplained rejection: %+v", err)
	}
	var target *messages.Error
	if !errors.As(error(err), &target) {
		t.Fatal("not a *messages.Error")
	}
	if (Verdict{Accepted: true}).Error() != nil {
		t.Fatal("accepted verdict has an error")
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"Wallet.AccountTransfer": "Wallet.AccountTransfer",
		"a-b_c.9":                "a-b_c.9",
		"a b\nc\"d":              "a_b_c_d",
		"é":                      "_",
		"":                       "",
		strings.Repeat("x", 100): strings.Repeat("x", MaxNameLen),
		strings.Repeat("é", 100): strings.Repeat("_", MaxNameLen),
		"\xff\xfe":               "__",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAllowlist(t *testing.T) {
	if got := Allowlist(); !slices.Equal(got, fullAllowlist) {
		t.Fatalf("Allowlist() = %q", got)
	}
	Allowlist()[0] = "Wallet.Withdraw"
	if Allowlist()[0] != "ContractTrade.Order" {
		t.Fatal("Allowlist returns shared state")
	}
}

func sane(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
