package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// stagedReader is a marketReader whose reads wait at a gate until every
// expected read has started (so reads made one after the other never
// pass it), then answer in the order given by delay, with fail's errors.
type stagedReader struct {
	started sync.WaitGroup
	gate    chan struct{}
	delay   map[string]time.Duration
	fail    map[string]error
	panics  string
}

func newStagedReader(reads int) *stagedReader {
	r := &stagedReader{gate: make(chan struct{}), delay: map[string]time.Duration{}, fail: map[string]error{}}
	r.started.Add(reads)
	go func() { r.started.Wait(); close(r.gate) }()
	return r
}

func (r *stagedReader) read(name string) error {
	r.started.Done()
	select {
	case <-r.gate:
	case <-time.After(10 * time.Second):
		return errors.New(name + ": the other reads never started")
	}
	time.Sleep(r.delay[name])
	if r.panics == name {
		panic(name + " broke")
	}
	return r.fail[name]
}

func (r *stagedReader) Instrument(context.Context, messages.Category, string) (*messages.Instrument, error) {
	return &messages.Instrument{Symbol: "BTCUSDT"}, r.read("instrument")
}

func (r *stagedReader) Ticker(context.Context, messages.Category, string) (*messages.Ticker, error) {
	return &messages.Ticker{Symbol: "BTCUSDT"}, r.read("ticker")
}

func (r *stagedReader) PriceLimit(context.Context, messages.Category, string) (*messages.PriceLimit, error) {
	return &messages.PriceLimit{}, r.read("band")
}

func (r *stagedReader) Positions(context.Context, venue.PositionQuery) (messages.Page[messages.Position], error) {
	return messages.Page[messages.Position]{Items: []messages.Position{{Symbol: "BTCUSDT"}}}, r.read("positions")
}

// The market reads of a decision run at once; the answer is the first
// failure in the order instrument, ticker, band, positions, whichever
// came first in time; a read that panics is a failure, not a crash.
func TestReadMarketReadsAtOnceAndAnswersInOrder(t *testing.T) {
	ctx := context.Background()

	r := newStagedReader(4)
	mk, err := readMarket(ctx, r, messages.CategoryLinear, "BTCUSDT")
	if err != nil || mk.Instrument == nil || mk.Ticker == nil || mk.Band == nil || !mk.PositionRead || mk.Position == nil {
		t.Fatalf("linear: %+v, %v", mk, err)
	}

	r = newStagedReader(3) // spot reads no position
	if _, err := readMarket(ctx, r, messages.CategorySpot, "BTCUSDT"); err != nil {
		t.Fatalf("spot: %v", err)
	}

	tickerErr, positionsErr := errors.New("ticker failed"), errors.New("positions failed")
	r = newStagedReader(4)
	r.fail["ticker"], r.delay["ticker"] = tickerErr, 50*time.Millisecond
	r.fail["positions"] = positionsErr
	if _, err := readMarket(ctx, r, messages.CategoryLinear, "BTCUSDT"); !errors.Is(err, tickerErr) {
		t.Fatalf("two failures: %v, want the ticker's (first in order, last in time)", err)
	}

	r = newStagedReader(4)
	r.panics = "band"
	if _, err := readMarket(ctx, r, messages.CategoryLinear, "BTCUSDT"); err == nil || !strings.Contains(err.Error(), "market read panicked") {
		t.Fatalf("a panicking read: %v", err)
	}
}
