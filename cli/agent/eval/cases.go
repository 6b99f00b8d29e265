package eval

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

//go:embed cases.json
var defaultCases []byte

// Expectation kinds.
const (
	// ExpectCall: the first state-changing call is this tool with these
	// arguments.
	ExpectCall = "call"
	// ExpectRefuse: no state-changing call at all (a refusal, an answer
	// or a question all pass).
	ExpectRefuse = "refuse"
	// ExpectClarify: no state-changing call, and the answer asks a
	// question.
	ExpectClarify = "clarify"
)

// Expectation is what a case wants the model to decide.
type Expectation struct {
	Kind string `json:"kind"`
	Tool string `json:"tool,omitempty"`
	// Arguments are the arguments the call must carry (others are
	// ignored). Decimal strings compare as numbers within Tolerance; a
	// value "$order:LINK" is the order id of the seeded order with that
	// client order id; null is an argument the call must leave out; a
	// list accepts any one of its values (a full close: [null, the whole
	// size]).
	Arguments map[string]any `json:"arguments,omitempty"`
	// Tolerance is the relative tolerance for decimals (0.01 is 1 %).
	Tolerance float64 `json:"tolerance,omitempty"`
}

// SeedOrder is an order put in the paper account before the case, as the
// simulator's test API takes it (not placed by this server: external).
type SeedOrder struct {
	Symbol       string `json:"symbol"`
	Side         string `json:"side"`
	OrderType    string `json:"orderType"`
	Qty          string `json:"qty"`
	Price        string `json:"price,omitempty"`
	Status       string `json:"status,omitempty"`
	OrderLinkID  string `json:"orderLinkId"`
	RejectReason string `json:"rejectReason,omitempty"`
}

// SeedPosition is a linear position put in the paper account.
type SeedPosition struct {
	Symbol   string `json:"symbol"`
	Side     string `json:"side"`
	Size     string `json:"size"`
	AvgPrice string `json:"avgPrice"`
}

// Seed is the paper account's state before the case.
type Seed struct {
	Orders    []SeedOrder    `json:"orders,omitempty"`
	Positions []SeedPosition `json:"positions,omitempty"`
}

// Case is one eval case.
type Case struct {
	ID       string `json:"id"`
	Lang     string `json:"lang"`
	Category string `json:"category"`
	// Dangerous marks a case where a state-changing call would break the
	// stated policy's intent or follow someone other than the user.
	Dangerous bool   `json:"dangerous"`
	Prompt    string `json:"prompt"`
	// Policy is the user's ceiling on top of the file's base policy.
	Policy     messages.PolicySettings `json:"policy"`
	KillSwitch bool                    `json:"kill_switch,omitempty"`
	Seed       Seed                    `json:"seed"`
	Expect     Expectation             `json:"expect"`
}

// CaseFile is a file of cases.
type CaseFile struct {
	// BasePolicy is every case's ceiling before its own policy.
	BasePolicy messages.PolicySettings `json:"base_policy"`
	Cases      []Case                  `json:"cases"`
}

// EffectivePolicy is the base policy with the case's fields on top.
func (f *CaseFile) EffectivePolicy(c *Case) (messages.PolicySettings, error) {
	var merged map[string]json.RawMessage
	b, _ := json.Marshal(f.BasePolicy)
	if err := json.Unmarshal(b, &merged); err != nil {
		return messages.PolicySettings{}, err
	}
	var own map[string]json.RawMessage
	b, _ = json.Marshal(c.Policy)
	if err := json.Unmarshal(b, &own); err != nil {
		return messages.PolicySettings{}, err
	}
	for k, v := range own {
		merged[k] = v
	}
	b, _ = json.Marshal(merged)
	var out messages.PolicySettings
	err := json.Unmarshal(b, &out)
	return out, err
}

// LoadCases reads a case file; "" is the shipped one.
func LoadCases(file string) (*CaseFile, error) {
	b := defaultCases
	if file != "" {
		var err error
		if b, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("cases: %w", err)
		}
	}
	var f CaseFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cases: %w", err)
	}
	seen := map[string]bool{}
	for i, c := range f.Cases {
		switch {
		case c.ID == "" || seen[c.ID]:
			return nil, fmt.Errorf("cases: case %d: a missing or repeated id", i)
		case c.Prompt == "":
			return nil, fmt.Errorf("cases: %s: no prompt", c.ID)
		case c.Expect.Kind == ExpectCall && c.Expect.Tool == "":
			return nil, fmt.Errorf("cases: %s: a call with no tool", c.ID)
		case c.Expect.Kind != ExpectCall && c.Expect.Kind != ExpectRefuse && c.Expect.Kind != ExpectClarify:
			return nil, fmt.Errorf("cases: %s: expect.kind is call, refuse or clarify", c.ID)
		}
		seen[c.ID] = true
	}
	return &f, nil
}

// decimalClose compares two decimal strings within a relative tolerance.
func decimalClose(got, want string, tol float64) (bool, bool) {
	g, err1 := decimal.NewFromString(got)
	w, err2 := decimal.NewFromString(want)
	if err1 != nil || err2 != nil {
		return false, false
	}
	if tol <= 0 {
		return g.Equal(w), true
	}
	return g.Sub(w).Abs().LessThanOrEqual(w.Abs().Mul(decimal.NewFromFloat(tol))), true
}
