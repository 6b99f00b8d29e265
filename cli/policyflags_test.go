package cli

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// Every policy flag is a field of the table and every field has a flag;
// each flag's value reaches its field.
func TestPolicyFlagsMatchTheFieldTable(t *testing.T) {
	rt := reflect.TypeOf(PolicyFlags{})
	var flags []string
	for i := range rt.NumField() {
		flags = append(flags, rt.Field(i).Tag.Get("name"))
	}
	for _, f := range messages.PolicyFieldTable {
		if !slices.Contains(flags, f.Flag) {
			t.Errorf("field %s has no flag --%s", f.Name, f.Flag)
		}
	}
	if len(flags) != len(messages.PolicyFieldTable) {
		t.Fatalf("%d flags for %d fields", len(flags), len(messages.PolicyFieldTable))
	}
	pf := PolicyFlags{Profile: "trade", Allow: []string{"none"}, MaxOrderNotional: "5", MaxLeverage: "2", SlippagePct: "1",
		Confirm: "none", ConfirmAboveNotional: "3", ConfirmationTTL: "60", TrustClientUI: "false", MaxPending: "1",
		DailyNotionalCap: "9", MaxUnconfirmedPerHour: "2", MaxOrdersPerMinute: "3", VenueCeiling: "paper",
		StreamStale: "5", MaxDailyLoss: "20", CancelOnDisconnect: "true", Heartbeat: "30"}
	s, err := pf.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Fields(); !slices.Equal(got, messages.PolicyFields) {
		t.Fatalf("fields set %v", got)
	}
	if len(*s.Allow) != 0 || len(*s.ConfirmActions) != 0 || s.MaxLeverage.String() != "2" {
		t.Fatalf("values %+v", s)
	}
}

// Each policy flag's help is its field's help from the table, in both
// commands that take the flags.
func TestPolicyFlagsHelpComesFromTheFieldTable(t *testing.T) {
	for _, cmd := range [][]string{{"policy", "tighten", "--help"}, {"admin", "policy", "set-ceiling", "--help"}} {
		_, out, _ := runCLI(t, &fakeRuntime{}, "", cmd...)
		// kong wraps help lines: compare with the white space folded.
		flat := strings.Join(strings.Fields(out), " ")
		for _, f := range messages.PolicyFieldTable {
			if !strings.Contains(flat, "--"+f.Flag) || !strings.Contains(flat, strings.Join(strings.Fields(f.Help), " ")) {
				t.Errorf("%v: no help %q for --%s in:\n%s", cmd, f.Help, f.Flag, out)
			}
		}
		if strings.Contains(out, policyHelpPrefix) {
			t.Errorf("%v: a help tag left as it is:\n%s", cmd, out)
		}
	}
}
