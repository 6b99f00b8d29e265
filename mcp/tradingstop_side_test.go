package mcp

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// TestTradingStopRefusesAPositionSideItCannotRead: set_trading_stop
// decides whether a stop-loss change adds risk from the position's side.
// A venue that lists a short with side "sell" (not one of Bybit's sides)
// used to have it taken for a long, so raising its stop-loss (loosening
// it) looked risk-reducing and passed the kill switch. As for amend_order
// (D87), such a side is refused with exchange_unavailable /
// malformed_result and nothing is sent; so is close_position's.
func TestTradingStopRefusesAPositionSideItCannotRead(t *testing.T) {
	var mangle atomic.Bool
	d := newDurableEnvWrapped(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !mangle.Load() || r.URL.Path != "/v5/position/list" {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := bytes.ReplaceAll(rec.Body.Bytes(), []byte(`"side":"Sell"`), []byte(`"side":"sell"`))
			for k, v := range rec.Header() {
				if !strings.EqualFold(k, "Content-Length") {
					w.Header()[k] = v
				}
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	})
	e := d.env
	e.tradeUser(t, "alice", messages.PolicySettings{})
	cs := connect(t, Options{Backend: e.sys, Principal: fixedPrincipal("alice", ProfileTrade), CallsPerSecond: 1e6, CallBurst: 1e6}, "")
	lin := map[string]any{"symbol": "BTCUSDT", "category": "linear"}
	if out, isErr := callJSON(t, cs, "place_order", with(with(with(lin, "side", "Sell"), "order_type", "Market"), "qty", "0.002")); isErr {
		t.Fatalf("short: %v", out)
	}
	if out, isErr := callJSON(t, cs, "set_trading_stop", with(lin, "stop_loss", "90000")); isErr {
		t.Fatalf("stop-loss of the short: %v", out)
	}
	if pos := positionOf(t, cs); pos["side"] != "Sell" || pos["stop_loss"] != "90000" {
		t.Fatalf("position: %v", pos)
	}
	if out, isErr := callJSON(t, cs, "activate_kill_switch", map[string]any{}); isErr {
		t.Fatal(out)
	}
	// With the side as Bybit spells it, loosening is refused.
	if out, isErr := callJSON(t, cs, "set_trading_stop", with(lin, "stop_loss", "120000")); !isErr || out["code"] != "kill_switch_active" {
		t.Fatalf("loosening the short's stop-loss under the kill switch: %v", out)
	}
	mangle.Store(true)
	out, isErr := callJSON(t, cs, "set_trading_stop", with(lin, "stop_loss", "120000"))
	mangle.Store(false)
	if details, _ := out["details"].(map[string]any); !isErr || out["code"] != "exchange_unavailable" || details["reason"] != "malformed_result" {
		t.Errorf("with the position's side listed as \"sell\", the short's stop-loss change was not refused as unreadable: %v", out)
	}
	if pos := positionOf(t, cs); pos["stop_loss"] != "90000" {
		t.Errorf("the short's stop-loss was loosened under the kill switch: position now %v", pos)
	}
	// close_position reads which side closes it from the same side.
	mangle.Store(true)
	out, isErr = callJSON(t, cs, "close_position", lin)
	mangle.Store(false)
	if details, _ := out["details"].(map[string]any); !isErr || out["code"] != "exchange_unavailable" || details["reason"] != "malformed_result" {
		t.Errorf("close_position of a position listed as \"sell\": %v", out)
	}
	if pos := positionOf(t, cs); pos["side"] != "Sell" || pos["size"] != "0.002" {
		t.Errorf("position after the refused close: %v", pos)
	}
}
