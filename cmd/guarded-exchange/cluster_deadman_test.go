package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
)

// The dead-man switch follows the shard (docs/cluster.md "Sessions and
// the dead-man switch", D192). Two users with cancel_on_disconnect on,
// whose shards one member X owns, each leave a resting order in an open
// MCP session: user U through X itself, user V through another member.
// X is SIGKILLed: the shards' new owners cancel U's order (its session
// ended with X), journaled under system:deadman in U's shard journal,
// within the lock's TTL and a few seconds, and leave V's (its session's
// front is alive). When V's session then ends on its front, the new owner
// cancels V's order: it knew the session was open.
func TestClusterDeadmanFollowsTheShard(t *testing.T) {
	t.Parallel()
	r := newClusterRig(t, 3, nil)
	members, ann, first, data := r.members, r.ann, r.first, r.data
	// Four users over three members: two of them have shards one member
	// owns.
	const users = 4
	r.addUsers(users, "--cancel-on-disconnect", "true")
	tokens := map[string]string{}
	for u := range users {
		tokens[fmt.Sprintf("user%d", u)] = r.tokens[u]
	}
	_, _, owners := shardRecords(t, first, data)
	byOwner := map[string][]string{}
	for u := range users {
		name := fmt.Sprintf("user%d", u)
		byOwner[owners[route.OfUser(name, clusterShards)]] = append(byOwner[owners[route.OfUser(name, clusterShards)]], name)
	}
	var x *clusterMember
	var pair []string
	for _, m := range members {
		if len(byOwner[m.advertise]) >= 2 {
			x, pair = m, byOwner[m.advertise][:2]
			break
		}
	}
	if x == nil {
		t.Fatalf("no member owns two of the users' shards: %v", byOwner)
	}
	var y *clusterMember
	for _, m := range members {
		if m != x {
			y = m
			break
		}
	}
	userU, userV := pair[0], pair[1]

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// open connects a session through m and leaves a resting order in it.
	open := func(m *clusterMember, user string) (*sdk.ClientSession, string) {
		t.Helper()
		cs, err := r.connect(ctx, m, tokens[user])
		if err != nil {
			t.Fatalf("connect %s through %s: %v", user, m.advertise, err)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "place_order", Arguments: map[string]any{"symbol": "BTCUSDT", "category": "linear",
			"side": "Buy", "order_type": "Limit", "qty": "0.001", "price": "20000", "idempotency_key": user + "-resting"}})
		if err != nil || res.IsError {
			t.Fatalf("place_order of %s: %v %+v", user, err, res)
		}
		var ans struct {
			Status        string `json:"status"`
			ClientOrderID string `json:"client_order_id"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &ans); err != nil || ans.Status != "accepted" {
			t.Fatalf("place_order of %s answered %v (%v)", user, res.Content[0], err)
		}
		return cs, ans.ClientOrderID
	}
	csU, orderU := open(x, userU)
	defer csU.Close()
	csV, orderV := open(y, userV)
	defer csV.Close()
	if s := simOrderStatus(t, ann.REST, orderU); s != "New" {
		t.Fatalf("%s's order is %q on the simulator before the kill", userU, s)
	}

	x.kill(t)
	killed := time.Now()
	// waitStatus waits until the order has status want on the simulator.
	waitStatus := func(order, want string, within time.Duration) time.Duration {
		t.Helper()
		from := time.Now()
		for {
			s := simOrderStatus(t, ann.REST, order)
			if s == want {
				return time.Since(from)
			}
			if time.Since(from) > within {
				t.Fatalf("order %s is %q, not %q, %v after the kill", order, s, want, time.Since(killed).Round(time.Millisecond))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitStatus(orderU, "Cancelled", 15*time.Second)
	t.Logf("%s's order cancelled %v after its session's member was killed (lock TTL 2 s, membership TTL 3 s)", userU, time.Since(killed).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	if s := simOrderStatus(t, ann.REST, orderV); s != "New" {
		t.Fatalf("%s's order is %q after the kill: its session's front %s is alive", userV, s, y.advertise)
	}

	// U's cancel is in U's shard journal, after a deadman_triggered.
	dir := filepath.Join(data, "shards", fmt.Sprint(route.OfUser(userU, clusterShards)), "journal")
	res := run(t, first.env(), "", "journal", "dump", "--dir", dir, "--type", "deadman_triggered", "--type", "order_attempt", "--type", "agent_session")
	if res.code != 0 {
		t.Fatalf("journal dump: %d %s", res.code, res.stderr)
	}
	var triggered, cancelAttempt, ended bool
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var rec struct {
			Type, User, Actor string
			Payload           struct {
				Reason, Event, Tool, ClientOrderID string
				LinkID                             string `json:"settle_link_id"`
			}
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("dump line %q: %v", line, err)
		}
		if rec.User != userU {
			continue
		}
		switch {
		case rec.Type == "agent_session" && rec.Payload.Event == "ended":
			ended = true
		case rec.Type == "deadman_triggered" && rec.Actor == "system:deadman" && rec.Payload.Reason == "disconnect":
			triggered = true
		case rec.Type == "order_attempt" && rec.Actor == "system:deadman" && triggered:
			cancelAttempt = true
		}
	}
	if !ended || !triggered || !cancelAttempt {
		t.Fatalf("%s's shard journal: session ended %v, deadman_triggered %v, a cancel attempt by system:deadman after it %v:\n%s", userU, ended, triggered, cancelAttempt, res.stdout)
	}

	// V's session ends on its live front: the new owner knew it was open
	// and cancels V's order.
	_ = csV.Close()
	waitStatus(orderV, "Cancelled", 15*time.Second)
}

// simOrderStatus is the simulator's status of the order with client
// order id link ("" when it has none).
func simOrderStatus(t *testing.T, base, link string) string {
	t.Helper()
	resp, err := http.Get(base + "/sim/orders")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all []struct {
		OrderLinkID string `json:"orderLinkId"`
		Status      string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	for _, o := range all {
		if o.OrderLinkID == link {
			return o.Status
		}
	}
	return ""
}
