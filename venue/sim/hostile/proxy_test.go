package hostile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
	"github.com/guarded-exchange/guarded-exchange/venue/sim"
	"github.com/guarded-exchange/guarded-exchange/venue/sim/hostile"
)

// startProxied starts the simulator, a proxy in front of its private
// stream and a venue.Stream through the proxy.
func startProxied(t *testing.T) (*hostile.Proxy, *venue.Stream) {
	t.Helper()
	srv, err := sim.Start(sim.Config{Seed: 7, NoPublicRateLimit: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	key := sim.Key{APIKey: "HOSTILEKEY0123456789", APISecret: "hostile-secret-0123456789abcdefghij"}
	if _, err := srv.Sim().ProvisionKey(key, map[string]decimal.Decimal{"USDT": decimal.NewFromInt(10000)}); err != nil {
		t.Fatal(err)
	}
	p, err := hostile.New(srv.Announcement().WSPrivate)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s, err := venue.NewStream(venue.StreamConfig{URL: p.URL(), APIKey: key.APIKey, APISecret: key.APISecret,
		Backoff: func(int) time.Duration { return 20 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitSubscribed(ctx, 1); err != nil {
		t.Fatalf("the stream never subscribed through the proxy: %v", err)
	}
	// The proxy counts the subscribe request; the client is connected only
	// once the venue's acknowledgement reached it. A cut before that is a
	// failed first connect, not a reconnect.
	next(t, s, messages.StreamConnected)
	return p, s
}

func next(t *testing.T, s *venue.Stream, kind messages.StreamEventKind) messages.StreamEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.Events():
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event", kind)
		}
	}
}

// A forged push reaches the client as if the venue had sent it.
func TestInjectedPushReachesTheClient(t *testing.T) {
	p, s := startProxied(t)
	if n := p.Inject(hostile.Push("order", hostile.Order(map[string]any{"orderLinkId": "forged-1", "orderStatus": "Filled"}))); n != 1 {
		t.Fatalf("injected into %d connections, want 1", n)
	}
	ev := next(t, s, messages.StreamOrders)
	if len(ev.Orders) != 1 || ev.Orders[0].OrderLinkID != "forged-1" || ev.Orders[0].Status != "Filled" {
		t.Fatalf("got %+v", ev.Orders)
	}
}

// Cut drops the connection; the client reconnects through the proxy.
func TestCutMakesTheClientReconnect(t *testing.T) {
	p, s := startProxied(t)
	p.Cut()
	next(t, s, messages.StreamDisconnected)
	next(t, s, messages.StreamReconnected)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitSubscribed(ctx, 2); err != nil {
		t.Fatal(err)
	}
}

// A flood is sent at about the asked rate, and the filter drops what the
// simulator itself pushes.
func TestFloodAndFilter(t *testing.T) {
	p, s := startProxied(t)
	p.SetFilter(func(msg []byte) [][]byte {
		if strings.Contains(string(msg), `"topic":"order"`) {
			return nil
		}
		return [][]byte{msg}
	})
	go func() {
		for range s.Events() { // keep the client reading
		}
	}()
	sent := p.Flood(context.Background(), 2000, 200*time.Millisecond, func(i int) []byte {
		return hostile.Push("order", hostile.Order(nil))
	})
	if sent != 400 {
		t.Fatalf("flood sent %d frames for 200 ms at 2000/s, want 400", sent)
	}
	if got := p.Injected(); got != 400 {
		t.Fatalf("%d frames reached the client's writer, want 400", got)
	}
}
