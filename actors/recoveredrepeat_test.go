package actors

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/actors/risk"
	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/wal"
)

// A keyed call whose server stopped before it answered (its attempt open
// in the journal) is reconciled at the next start; a repeat of it with
// the same key then answers what the reconcile found, with the client
// order id: outcome_unknown (the first answer is not known) naming the
// client order id and reconnaissance "found" or "not_found", never an
// outcome_unknown that leaves the agent without the id to look for.
func TestRepeatAfterRecoveryNamesTheClientOrderID(t *testing.T) {
	dir := t.TempDir()
	te := newTradeEnv(t, dir)
	te.tradeReady(t, messages.PolicySettings{})
	args := map[string]messages.PlaceOrderArgs{"gx-rec-found": limitArgs("0.010", "30010"), "gx-rec-lost": limitArgs("0.010", "30011")}
	now := time.Now().UTC()
	for id, a := range args {
		a.IdempotencyKey = "key-" + id
		args[id] = a
		payload, _ := json.Marshal(messages.OrderAttemptEvent{ActionID: id, ClientOrderID: id, Environment: "paper", Tool: risk.ToolPlaceOrder,
			Category: messages.CategoryLinear, Symbol: "BTCUSDT", At: now, NotionalUSDT: decimal.NewFromInt(300), RiskIncreasing: true,
			IdempotencyKey: a.IdempotencyKey, ArgsSHA256: risk.PlaceArgsHash(risk.ToolPlaceOrder, a)})
		if _, err := te.log.Append([]wal.Entry{{Time: now, Type: uint16(messages.RecordOrderAttempt), User: te.user, Actor: messages.ActorAgent, Payload: payload}}); err != nil {
			t.Fatal(err)
		}
	}
	te.stop()
	ms := time.Now().UnixMilli()
	seed, _ := json.Marshal([]map[string]any{{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01",
		"price": "30010", "status": "New", "orderLinkId": "gx-rec-found", "createdTime": ms, "updatedTime": ms, "timeInForce": "GTC"}})
	resp, err := http.Post(te.ann.REST+"/sim/accounts/"+te.ann.APIKey+"/orders", "application/json", bytes.NewReader(seed))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("seed the order on the simulator: %v %v", err, resp)
	}
	resp.Body.Close()
	te.testSystem = te.start(t, dir)
	waitJournal(t, dir, "order_outcome:gx-rec-found:found:reconnaissance")
	waitJournal(t, dir, "order_outcome:gx-rec-lost:not_found:reconnaissance")
	for id, recon := range map[string]string{"gx-rec-found": "found", "gx-rec-lost": "not_found"} {
		_, e := te.place(t, args[id])
		if e == nil || e.Code != messages.CodeOutcomeUnknown || e.Details["client_order_id"] != id || e.Details["reconnaissance"] != recon ||
			e.Details["result_source"] != messages.ResultSourceReplay || e.NextStep == "" {
			t.Fatalf("repeat of %s after recovery: %s", id, errText(e))
		}
	}
	if n := te.simOrders(t, "gx-rec-lost"); n != 0 {
		t.Fatalf("a repeat sent the lost order again (%d on the venue)", n)
	}
}
