package sim

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestStartingBalances(t *testing.T) {
	s := New(Config{Seed: 1, StartingBalances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}})
	s.mu.Lock()
	got := s.keys[s.DefaultKey().APIKey].acct.ledgerLocked().balances["USDT"]
	s.mu.Unlock()
	if !got.Equal(decimal.NewFromInt(10000)) {
		t.Fatalf("starting USDT = %s", got)
	}
	empty := New(Config{Seed: 1})
	empty.mu.Lock()
	n := len(empty.keys[empty.DefaultKey().APIKey].acct.ledgerLocked().balances)
	empty.mu.Unlock()
	if n != 0 {
		t.Fatalf("a simulator without starting balances has %d coins", n)
	}
}
