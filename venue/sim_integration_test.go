package venue_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
)

// startSim serves a seeded simulator on loopback and returns a client for
// it signed with key.
func startSim(t *testing.T) (*sim.Sim, string) {
	t.Helper()
	s := sim.New(sim.Config{Seed: 7})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func simClient(t *testing.T, base string, key sim.Key) *venue.Client {
	t.Helper()
	c, err := venue.NewClient(venue.Config{BaseURL: base, APIKey: key.APIKey, APISecret: key.APISecret})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSimMarketData(t *testing.T) {
	s, base := startSim(t)
	c := simClient(t, base, s.DefaultKey())
	ctx := context.Background()
	for _, cat := range []messages.Category{messages.CategorySpot, messages.CategoryLinear} {
		t.Run(string(cat), func(t *testing.T) {
			tk, err := c.Ticker(ctx, cat, "BTCUSDT")
			if err != nil {
				t.Fatalf("Ticker: %v", err)
			}
			if tk.Symbol != "BTCUSDT" || !tk.LastPrice.IsPositive() || tk.HasDerivatives != (cat == messages.CategoryLinear) {
				t.Fatalf("ticker %+v", tk)
			}
			if tk.Bid1Price.IsPositive() && tk.Ask1Price.IsPositive() && !tk.Bid1Price.LessThan(tk.Ask1Price) {
				t.Fatalf("bid %s not below ask %s", tk.Bid1Price, tk.Ask1Price)
			}
			if cat == messages.CategoryLinear && (!tk.MarkPrice.IsPositive() || !tk.IndexPrice.IsPositive()) {
				t.Fatalf("linear ticker without mark/index: %+v", tk)
			}

			book, err := c.Orderbook(ctx, cat, "BTCUSDT", 5)
			if err != nil {
				t.Fatalf("Orderbook: %v", err)
			}
			if len(book.Bids) == 0 || len(book.Asks) == 0 || len(book.Bids) > 5 || len(book.Asks) > 5 {
				t.Fatalf("book depth %d/%d", len(book.Bids), len(book.Asks))
			}
			if !slices.IsSortedFunc(book.Bids, func(a, b messages.BookLevel) int { return b.Price.Cmp(a.Price) }) ||
				!slices.IsSortedFunc(book.Asks, func(a, b messages.BookLevel) int { return a.Price.Cmp(b.Price) }) ||
				!book.Bids[0].Price.LessThan(book.Asks[0].Price) {
				t.Fatalf("book not ordered or crossed: %+v", book)
			}

			ks, err := c.Klines(ctx, messages.GetKlinesRequest{Category: cat, Symbol: "BTCUSDT", Interval: "1", Limit: 5})
			if err != nil {
				t.Fatalf("Klines: %v", err)
			}
			if len(ks) == 0 || len(ks) > 5 {
				t.Fatalf("%d candles", len(ks))
			}
			for i, k := range ks {
				if k.High.LessThan(k.Low) || k.Open.GreaterThan(k.High) || k.Close.LessThan(k.Low) {
					t.Fatalf("candle %d inconsistent: %+v", i, k)
				}
				if i > 0 && !k.Start.Before(ks[i-1].Start) {
					t.Fatalf("candles not newest first")
				}
			}

			in, err := c.Instrument(ctx, cat, "BTCUSDT")
			if err != nil {
				t.Fatalf("Instrument: %v", err)
			}
			if !in.TickSize.IsPositive() || !in.QtyStep.IsPositive() || !in.MinNotional.IsPositive() ||
				in.HasLeverage != (cat == messages.CategoryLinear) {
				t.Fatalf("instrument %+v", in)
			}

			pl, err := c.PriceLimit(ctx, cat, "BTCUSDT")
			if err != nil {
				t.Fatalf("PriceLimit: %v", err)
			}
			if !pl.BuyLimit.GreaterThan(pl.SellLimit) || !pl.BuyLimit.GreaterThan(tk.LastPrice) || !pl.SellLimit.LessThan(tk.LastPrice) {
				t.Fatalf("price band %s..%s around %s", pl.SellLimit, pl.BuyLimit, tk.LastPrice)
			}
		})
	}

	if _, err := c.Ticker(ctx, messages.CategoryLinear, "NOSUCHUSDT"); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := c.Instrument(ctx, messages.CategorySpot, "NOSUCHUSDT"); messages.CodeOf(err) != messages.CodeNotFound {
		t.Fatalf("unknown instrument: %v", err)
	}

	st, err := c.ServerTime(ctx)
	if err != nil {
		t.Fatalf("ServerTime: %v", err)
	}
	if d := time.Since(st); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("server time off by %v", d)
	}
}

// TestSimSignedQueryAPI checks signing end to end against the simulator's
// verifier: the default key is accepted, a wrong secret is not.
func TestSimSignedQueryAPI(t *testing.T) {
	s, base := startSim(t)
	key := s.DefaultKey()
	var res struct {
		APIKey      string              `json:"apiKey"`
		ReadOnly    int                 `json:"readOnly"`
		Permissions map[string][]string `json:"permissions"`
	}
	resp, err := simClient(t, base, key).Get(context.Background(), "/v5/user/query-api", nil, true, &res)
	if err != nil {
		t.Fatalf("query-api with the default key: %v", err)
	}
	if resp.RetCode != 0 || res.APIKey != key.APIKey || res.ReadOnly != 0 ||
		!slices.Contains(res.Permissions["ContractTrade"], "Order") || !slices.Contains(res.Permissions["Spot"], "SpotTrade") {
		t.Fatalf("query-api answer %+v", res)
	}

	bad := sim.Key{APIKey: key.APIKey, APISecret: key.APISecret + "x"}
	_, err = simClient(t, base, bad).Get(context.Background(), "/v5/user/query-api", nil, true, &res)
	if code := messages.CodeOf(err); code != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("wrong secret: %v (code %s)", err, code)
	}
	unknown := sim.Key{APIKey: "NOSUCHKEY123", APISecret: key.APISecret}
	_, err = simClient(t, base, unknown).Get(context.Background(), "/v5/user/query-api", nil, true, &res)
	if code := messages.CodeOf(err); code != messages.CodeExchangeCredentialsInvalid {
		t.Fatalf("unknown key: %v (code %s)", err, code)
	}
}
