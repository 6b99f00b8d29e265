package cli

import (
	"reflect"
	"slices"
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
