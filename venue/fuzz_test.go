package venue

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
)

// FuzzResponseBody feeds arbitrary bodies and statuses to the response
// parser: it must never panic, and every failure must be a *messages.Error.
func FuzzResponseBody(f *testing.F) {
	for _, name := range []string{"v5-market-tickers.linear.ccxt.json", "v5-market-orderbook.spot.ccxt.json",
		"v5-market-kline.linear.ccxt.json", "v5-market-instruments-info.spot.handmade.json"} {
		f.Add(200, readTestdata(f, name))
	}
	f.Add(200, []byte(`{"retCode":"10006","retMsg":"x","time":"abc"}`))
	f.Add(502, []byte(`<html>`))
	f.Add(200, []byte(`{"retCode":0,"result":{"list":[{"symbol":"BTCUSDT","lastPrice":1e99999}]}}`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			status = 200
		}
		tr := &handlerTransport{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = w.Write(body)
		})}
		c, err := NewClient(Config{BaseURL: "http://venue.invalid", HTTPClient: &http.Client{Transport: tr}, ReadRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		errs := []error{}
		_, err = c.Ticker(ctx, messages.CategoryLinear, "BTCUSDT")
		errs = append(errs, err)
		_, err = c.Orderbook(ctx, messages.CategorySpot, "BTCUSDT", 5)
		errs = append(errs, err)
		_, err = c.Klines(ctx, messages.GetKlinesRequest{Category: messages.CategoryLinear, Symbol: "BTCUSDT", Interval: "1"})
		errs = append(errs, err)
		_, err = c.Instrument(ctx, messages.CategorySpot, "BTCUSDT")
		errs = append(errs, err)
		_, err = c.Post(ctx, "/v5/order/create", nil, &struct{}{})
		errs = append(errs, err)
		for _, err := range errs {
			var e *messages.Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("error %v is not a *messages.Error", err)
			}
		}
	})
}
