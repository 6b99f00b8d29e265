package venue_test

import (
	"strings"
	"testing"

	"github.com/guarded-exchange/guarded-exchange/messages"
	"github.com/guarded-exchange/guarded-exchange/venue"
)

// D96 bounds every decimal the stream pushes, but no text field: an order
// push whose orderLinkId (or orderId, symbol, orderStatus, rejectReason)
// is 2 MB is delivered as it is. Every bound of the ingestion is a count
// of rows (the events channel 1024, the inbox 2048, WaitOrder's recent
// 4096, the cache's 1000 orders, a venue_update's 128), so the memory and
// journal they hold grow with what the venue chooses to put in a row.
func TestReviewStreamRowTextIsUnbounded(t *testing.T) {
	long := "gx-" + strings.Repeat("A", 2<<20)
	push := `{"topic":"order","creationTime":1700000000001,"data":[{"category":"linear","symbol":"BTCUSDT","orderId":"1f2e3d4c-0000-4000-8000-000000000003",` +
		`"orderLinkId":"` + long + `","side":"Buy","orderType":"Limit","price":"50000","qty":"0.01","orderStatus":"New","cumExecQty":"0","createdTime":"1700000000000","updatedTime":"1700000000000"}]}`
	url, _ := scriptedServer(t, []string{push})
	s := newStream(t, venue.StreamConfig{URL: url, APIKey: "K1234", APISecret: "S1234"})
	nextEvent(t, s, nil, messages.StreamConnected)
	var skipped []messages.StreamEvent
	ev := nextEvent(t, s, &skipped, messages.StreamOrders)
	if len(ev.Orders) == 1 && len(ev.Orders[0].OrderLinkID) > 1024 {
		t.Fatalf("an order row with a client order id of %d bytes was delivered (and kept for WaitOrder)", len(ev.Orders[0].OrderLinkID))
	}
}
