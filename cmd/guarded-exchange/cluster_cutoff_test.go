package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/guarded-exchange/guarded-exchange/actors/cluster/route"
	"github.com/guarded-exchange/guarded-exchange/actors/cluster/shard"
	"github.com/guarded-exchange/guarded-exchange/internal/etcdtest"
)

// attemptOwners reads every shard journal in order and returns, for each
// client order id with an order_attempt record, the member whose
// shard_owner record last preceded it: the owner that appended it.
func attemptOwners(t *testing.T, in install, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	owner := map[int]string{}
	eachShardRecord(t, in, data, func(n int, rec shardRecord) {
		if rec.Type == "shard_owner" {
			owner[n] = rec.Payload.Member
		} else {
			out[rec.Payload.ClientOrderID] = owner[n]
		}
	}, "order_attempt", "shard_owner")
	return out
}

// lockHolder returns the member holding shard n's lock in etcd (the
// value of the lock key with the lowest create revision), or "".
func lockHolder(ctx context.Context, cli *clientv3.Client, n int) (string, error) {
	resp, err := cli.Get(ctx, shard.LockPrefix("e2e", n), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil || len(resp.Kvs) == 0 {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}

// A member cut off from etcd stops acknowledging before its shards' locks
// can be taken over, so no two owners append to one chain. Every member
// reaches etcd through its own proxy; once the users have placed orders,
// the proxy of the member owning the most of their shards is cut while
// those users' orders keep arriving through every member, the cut one's
// own HTTP front too. The cut member acknowledges nothing after its
// locks' deadline (at most the lock TTL after the cut): every order it
// appended was answered before then and before the takeover observed in
// etcd, and every answer given after it through its front is a refusal
// or no answer. The others take its shards over once its leases expired
// and serve its users; every journal verifies (epochs never go down),
// every acknowledged order has its attempt and outcome, and no client
// order id reached the simulator twice.
func TestClusterMemberCutOffFromEtcd(t *testing.T) {
	t.Parallel()
	var proxies []*etcdtest.Proxy
	rig := newClusterRig(t, 3, func(_ int, etcd string) string {
		p := etcdtest.NewProxy(t, etcd)
		proxies = append(proxies, p)
		return p.Endpoint()
	})
	users := clusterScale("GX_CLUSTER_TEST_USERS", 8)
	rig.addUsers(users)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Every user places one order, activating its shard.
	acked := map[string]int{}
	for u := range users {
		m := rig.members[u%len(rig.members)]
		id, err := rig.place(ctx, m, u, fmt.Sprintf("u%d-first", u), 20000, 20*time.Second)
		if err != nil {
			t.Fatalf("user%d through %s: %v", u, m.advertise, err)
		}
		acked[id] = u
	}
	owners := rig.checkRecords("before the cut", acked)
	shardOf := func(u int) int { return route.OfUser(fmt.Sprintf("user%d", u), clusterShards) }
	usersOn := map[string][]int{} // member → its shards' users
	for u := range users {
		usersOn[owners[shardOf(u)]] = append(usersOn[owners[shardOf(u)]], u)
	}
	vi := 0
	for i, m := range rig.members {
		if len(usersOn[m.advertise]) > len(usersOn[rig.members[vi].advertise]) {
			vi = i
		}
	}
	victim := rig.members[vi]
	victimUsers := usersOn[victim.advertise]
	victimShards := map[int]bool{}
	for _, u := range victimUsers {
		victimShards[shardOf(u)] = true
	}
	t.Logf("cutting %s off etcd: it owns shards %v of users %v", victim.advertise, keys(victimShards), victimUsers)

	// The takeover of each of the victim's shards, as etcd shows it: the
	// first moment another member holds its lock.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{rig.etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var tmu sync.Mutex
	takeover := map[int]time.Time{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			for n := range victimShards {
				h, err := lockHolder(watchCtx, cli, n)
				at := time.Now()
				tmu.Lock()
				if _, seen := takeover[n]; err == nil && !seen && h != "" && h != victim.advertise {
					takeover[n] = at
				}
				tmu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// The victim's users place orders, one at a time each, through the
	// members in turn (the cut one included), from 1 s before the cut
	// until each user had an order acknowledged after the cut member's
	// deadline (by a new owner) and 6 s have passed since the cut, or
	// 25 s have; each call gets 3 s.
	type answer struct {
		u        int
		through  *clusterMember
		sent     time.Time
		answered time.Time
		id       string
		err      error
	}
	var amu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	loadStart := time.Now() // the cut comes 1 s later
	for _, u := range victimUsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servedAfter := false
			for i := 0; ; i++ {
				if since := time.Since(loadStart); since > 26*time.Second || servedAfter && since > 7*time.Second {
					return
				}
				m := rig.members[(u+i)%len(rig.members)]
				a := answer{u: u, through: m, sent: time.Now()}
				a.id, a.err = rig.place(ctx, m, u, fmt.Sprintf("u%d-cut%d", u, i), 19000, 3*time.Second)
				a.answered = time.Now()
				amu.Lock()
				answers = append(answers, a)
				amu.Unlock()
				if a.err == nil && a.sent.After(loadStart.Add(time.Second+clusterLockTTL)) {
					servedAfter = true
				}
				if a.err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	proxies[vi].Cut()
	cut := time.Now()
	wg.Wait()
	stopWatch()
	<-watched

	// The victim appended nothing after its locks' deadline: that is at
	// most the lock TTL after the cut (its last renewal was sent before
	// it, and the deadline is that send + TTL − a margin).
	deadline := cut.Add(clusterLockTTL)
	byOwner := attemptOwners(t, rig.first, rig.data)
	servedAgain := map[int]bool{}
	var fromVictim, fromNew, refusedByVictim, silentVictim int
	for _, a := range answers {
		rel := func(x time.Time) string { return x.Sub(cut).Round(time.Millisecond).String() }
		if a.err == nil {
			acked[a.id] = a.u
			owner := byOwner[a.id]
			switch {
			case owner == victim.advertise:
				fromVictim++
				tmu.Lock()
				took, ok := takeover[shardOf(a.u)]
				tmu.Unlock()
				if !a.answered.Before(deadline) || ok && !a.answered.Before(took) {
					t.Errorf("the cut member acknowledged order %s of user%d at %s after the cut (its lock's deadline at most %s, takeover %v)",
						a.id, a.u, rel(a.answered), rel(deadline), took.Sub(cut).Round(time.Millisecond))
				}
			case owner == "":
				t.Errorf("acknowledged order %s of user%d has no attempt in the shard journals", a.id, a.u)
			default:
				fromNew++
				if a.sent.After(cut) {
					servedAgain[a.u] = true
				}
			}
			continue
		}
		if a.through != victim || !a.sent.After(deadline) {
			continue
		}
		// An answer through the cut member's front after the deadline:
		// only a refusal (shard_fenced shows as internal_error at the
		// front, shard_unavailable as exchange_unavailable) or none.
		var te *toolError
		switch {
		case errors.As(a.err, &te):
			if te.Code != "internal_error" && te.Code != "exchange_unavailable" {
				t.Errorf("the cut member answered user%d at %s with %s", a.u, rel(a.answered), te.text)
			}
			refusedByVictim++
		default:
			silentVictim++ // no answer within the call's 3 s
		}
	}
	for _, u := range victimUsers {
		if !servedAgain[u] {
			t.Errorf("user%d was not served by another member after the cut", u)
		}
	}
	tmu.Lock()
	for n := range victimShards {
		took, ok := takeover[n]
		if !ok {
			t.Errorf("shard %d was not taken over", n)
			continue
		}
		if took.Before(deadline.Add(-clusterLockTTL / 2)) {
			t.Errorf("shard %d was taken over %v after the cut, before the cut member's lease could have expired", n, took.Sub(cut))
		}
		t.Logf("shard %d taken over %v after the cut", n, took.Sub(cut).Round(time.Millisecond))
	}
	tmu.Unlock()
	t.Logf("%d answers: %d orders acknowledged by the cut member before its deadline, %d by the new owners; after its deadline the cut member's front refused %d calls and left %d unanswered",
		len(answers), fromVictim, fromNew, refusedByVictim, silentVictim)
	if !strings.Contains(victim.log(), "shard: lock lost; stopping the shard") {
		t.Errorf("the cut member did not log that it lost a lock")
	}
	after := rig.checkRecords("after the cut", acked)
	for n := range victimShards {
		if after[n] == victim.advertise {
			t.Errorf("shard %d: the last owner record is still the cut member's", n)
		}
	}
}

func keys[K interface{ ~int }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A call waiting on a member that is SIGKILLed is answered as soon as
// the cluster sees the member go (its connection ended, or its
// membership expired), not at its own deadline: wait_for_update with a
// 30 s wait, sent through one member to a user whose shard another
// member hosts, answers exchange_unavailable (reason shard_unavailable)
// within seconds of the kill, saying the call may or may not have taken
// effect (docs/decisions.md D189).
func TestClusterCallToKilledMemberAnswersEarly(t *testing.T) {
	t.Parallel()
	rig := newClusterRig(t, 2, nil)
	users := 4
	rig.addUsers(users)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acked := map[string]int{}
	for u := range users {
		id, err := rig.place(ctx, rig.members[u%2], u, fmt.Sprintf("u%d-first", u), 20000, 20*time.Second)
		if err != nil {
			t.Fatalf("user%d: %v", u, err)
		}
		acked[id] = u
	}
	owners := rig.checkRecords("before the kill", acked)
	// A user whose shard lives on one member; the call goes through the
	// other.
	u, victim, front := -1, (*clusterMember)(nil), (*clusterMember)(nil)
	for c := range users {
		owner := owners[route.OfUser(fmt.Sprintf("user%d", c), clusterShards)]
		for i, m := range rig.members {
			if m.advertise == owner {
				u, victim, front = c, m, rig.members[1-i]
			}
		}
		if u >= 0 {
			break
		}
	}
	if u < 0 {
		t.Fatalf("no user's shard has an owner: %v", owners)
	}
	cs, err := rig.connect(ctx, front, rig.tokens[u])
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type result struct {
		res *sdk.CallToolResult
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	sent := time.Now()
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "wait_for_update", Arguments: map[string]any{"symbol": "BTCUSDT", "timeout_s": 30}})
		done <- result{res, err, time.Now()}
	}()
	time.Sleep(1500 * time.Millisecond) // the call is waiting on the shard
	select {
	case r := <-done:
		t.Fatalf("wait_for_update answered before the kill: %v %v", r.res, r.err)
	default:
	}
	victim.kill(t)
	killed := time.Now()
	r := <-done
	t.Logf("the waiting call was answered %v after the kill (%v after it was sent, its wait 30 s)",
		r.at.Sub(killed).Round(time.Millisecond), r.at.Sub(sent).Round(time.Millisecond))
	if r.err != nil {
		t.Fatalf("wait_for_update: %v", r.err)
	}
	text := r.res.Content[0].(*sdk.TextContent).Text
	var te toolError
	if !r.res.IsError || json.Unmarshal([]byte(text), &te) != nil || te.Code != "exchange_unavailable" ||
		te.Details["reason"] != shard.ReasonUnavailable || !strings.Contains(te.Message, "may or may not have taken effect") {
		t.Fatalf("wait_for_update through %s after its shard's member was killed answered %s", front.advertise, text)
	}
	// The bound is far below the 30 s wait and the call's own deadline:
	// the answer came from the member's going, not from a timer.
	if d := r.at.Sub(killed); d > 15*time.Second {
		t.Fatalf("the waiting call was answered %v after the kill, not when the member went", d)
	}
}
