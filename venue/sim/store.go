package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/shopspring/decimal"
)

// The durable paper account (docs/simulator.md "Durable state").
//
// With Config.StatePath set, the simulator keeps every account's ledger
// (balances, positions with leverage, TP/SL and realised PnL, every order
// and every execution, the next sequence number) and the engine's last
// evaluated second in one JSON file. Whenever a change was applied, the
// whole file is rewritten (temporary file, fsync, rename, fsync of the
// directory) before Sim.mu is released: before the REST answer is written
// and before the private pushes of the change are sent. So an answer or a
// push the server saw is on disk, and a crash at any point leaves a state
// the server either saw or never heard of (its recovery asks, as on
// Bybit). A failed write makes every private request answer 10016 until a
// later write succeeds.
//
// Accounts are stored under the SHA-256 of their API key (the key itself
// and its secret are never written). An account comes back when its key is
// provisioned again (ProvisionKey); a stored account whose key is not
// provisioned in this run is carried over unchanged.

// stateVersion is the version of the state file's format.
const stateVersion = 1

// stateTempPattern names the temporary files of writeFileDurably.
const stateTempPattern = ".state-*.tmp"

// downtimeScanSeconds bounds how much of the time the state file was not
// served is evaluated second by second when it is opened again: the last
// hour (a week of seconds would keep the first request busy for seconds).
const downtimeScanSeconds = 3600

// stateFile is the state file's content.
type stateFile struct {
	Version  int             `json:"version"`
	SweptSec int64           `json:"swept_sec"`
	Accounts []storedAccount `json:"accounts"`
}

// storedAccount is one account of the state file. Orders and executions
// are kept encoded (storedOrder, storedExec): a final order and an
// execution never change, so their encoding is reused by every later
// write (stateStore.encoded).
type storedAccount struct {
	KeyHash   string                     `json:"key_sha256"`
	UID       int64                      `json:"uid"`
	Seq       uint64                     `json:"seq"`
	Balances  map[string]decimal.Decimal `json:"balances"`
	Leverage  map[string]decimal.Decimal `json:"leverage,omitempty"`
	Positions []storedPosition           `json:"positions,omitempty"`
	Orders    []json.RawMessage          `json:"orders,omitempty"`
	Execs     []json.RawMessage          `json:"executions,omitempty"`
	Resets    []storedReset              `json:"resets,omitempty"`
}

// storedReset is an accountReset (paper.go).
type storedReset struct {
	Seq   uint64       `json:"seq"`
	Ms    int64        `json:"ms"`
	Moves []storedMove `json:"moves,omitempty"`
}

// storedMove is a walletMove.
type storedMove struct {
	Seq    uint64          `json:"seq"`
	Coin   string          `json:"coin"`
	Change decimal.Decimal `json:"change"`
}

type storedPosition struct {
	Symbol         string          `json:"symbol"`
	Idx            int             `json:"idx"`
	Side           string          `json:"side"`
	Size           decimal.Decimal `json:"size"`
	AvgPrice       decimal.Decimal `json:"avg_price"`
	Leverage       decimal.Decimal `json:"leverage"`
	TakeProfit     decimal.Decimal `json:"take_profit"`
	StopLoss       decimal.Decimal `json:"stop_loss"`
	CumRealisedPnl decimal.Decimal `json:"cum_realised_pnl"`
	CreatedMs      int64           `json:"created_ms"`
	UpdatedMs      int64           `json:"updated_ms"`
	Seq            uint64          `json:"seq"`
}

type storedOrder struct {
	Seq                uint64          `json:"seq"`
	Category           string          `json:"category"`
	Symbol             string          `json:"symbol"`
	OrderID            string          `json:"order_id"`
	OrderLinkID        string          `json:"order_link_id"`
	Side               string          `json:"side"`
	OrderType          string          `json:"order_type"`
	TimeInForce        string          `json:"time_in_force"`
	Price              decimal.Decimal `json:"price"`
	Qty                decimal.Decimal `json:"qty"`
	CumExecQty         decimal.Decimal `json:"cum_exec_qty"`
	CumExecValue       decimal.Decimal `json:"cum_exec_value"`
	CumExecFee         decimal.Decimal `json:"cum_exec_fee"`
	FeeCoin            string          `json:"fee_coin"`
	AvgPrice           decimal.Decimal `json:"avg_price"`
	Status             string          `json:"status"`
	RejectReason       string          `json:"reject_reason"`
	CancelType         string          `json:"cancel_type"`
	ReduceOnly         bool            `json:"reduce_only,omitempty"`
	PositionIdx        int             `json:"position_idx,omitempty"`
	LastPriceOnCreated decimal.Decimal `json:"last_price_on_created"`
	CreatedMs          int64           `json:"created_ms"`
	UpdatedMs          int64           `json:"updated_ms"`
	MarketUnit         string          `json:"market_unit,omitempty"`
	QuoteQty           bool            `json:"quote_qty,omitempty"`
	CreateType         string          `json:"create_type,omitempty"`
	StopOrderType      string          `json:"stop_order_type,omitempty"`
	TakeProfit         decimal.Decimal `json:"take_profit"`
	StopLoss           decimal.Decimal `json:"stop_loss"`
	CloseOnTrigger     bool            `json:"close_on_trigger,omitempty"`
	ClosedPnl          decimal.Decimal `json:"closed_pnl"`
	SlipType           string          `json:"slip_type,omitempty"`
	Slip               string          `json:"slip,omitempty"`
	Seeded             bool            `json:"seeded,omitempty"`
}

type storedExec struct {
	Seq         uint64          `json:"seq"`
	Category    string          `json:"category"`
	Symbol      string          `json:"symbol"`
	ExecID      string          `json:"exec_id"`
	OrderID     string          `json:"order_id"`
	OrderLinkID string          `json:"order_link_id"`
	Side        string          `json:"side"`
	OrderType   string          `json:"order_type"`
	OrderPrice  decimal.Decimal `json:"order_price"`
	OrderQty    decimal.Decimal `json:"order_qty"`
	LeavesQty   decimal.Decimal `json:"leaves_qty"`
	ExecPrice   decimal.Decimal `json:"exec_price"`
	ExecQty     decimal.Decimal `json:"exec_qty"`
	ExecValue   decimal.Decimal `json:"exec_value"`
	ExecFee     decimal.Decimal `json:"exec_fee"`
	FeeRate     decimal.Decimal `json:"fee_rate"`
	FeeCurrency string          `json:"fee_currency"`
	IsMaker     bool            `json:"is_maker,omitempty"`
	ExecType    string          `json:"exec_type"`
	MarkPrice   decimal.Decimal `json:"mark_price"`
	ClosedSize  decimal.Decimal `json:"closed_size"`
	ExecPnl     decimal.Decimal `json:"exec_pnl"`
	CreateType  string          `json:"create_type,omitempty"`
	StopOrder   string          `json:"stop_order,omitempty"`
	ExecMs      int64           `json:"exec_ms"`
}

// stateStore is the durable part of a Sim with Config.StatePath, guarded
// by Sim.mu.
type stateStore struct {
	path    string
	dirty   bool                      // a change was applied since the last write
	parked  map[string]*storedAccount // stored accounts not provisioned in this run, by key hash
	failed  bool                      // the last write failed: private requests answer 10016
	encoded map[any]json.RawMessage   // the encoding of each final *simOrder and each *simExecution
	buf     bytes.Buffer              // the last write's encoding, its memory reused by the next
}

// keyHash is how the state file names an account: the SHA-256 of its API
// key, so the file holds neither the key nor its secret.
func keyHash(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:])
}

// openStateLocked reads the state file at path (a missing file is an empty
// state) and makes the simulator write every later change there.
func (s *Sim) openStateLocked(path string) error {
	st := &stateStore{path: path, parked: map[string]*storedAccount{}, encoded: map[any]json.RawMessage{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("paper state: %w", err)
	default:
		var f stateFile
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("paper state %s is damaged: %w", path, err)
		}
		if f.Version != stateVersion {
			return fmt.Errorf("paper state %s has format version %d, this build reads %d", path, f.Version, stateVersion)
		}
		for i := range f.Accounts {
			a := &f.Accounts[i]
			if err := a.check(); err != nil {
				return fmt.Errorf("paper state %s is damaged: %w", path, err)
			}
			st.parked[a.KeyHash] = a
		}
		if f.SweptSec > 0 {
			// Go on from the last second evaluated, so what the price did
			// while the process was down happens now, up to the last
			// downtimeScanSeconds of it.
			s.engine.sweptSec = max(f.SweptSec, floorDiv(s.now().UnixMilli(), 1000)-downtimeScanSeconds)
			s.engine.started = true
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("paper state: %w", err)
	}
	// A crash in the middle of a write leaves its temporary file: the
	// state file is whole (rename), the leftover is of no use.
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), stateTempPattern))
	for _, name := range stale {
		_ = os.Remove(name)
	}
	s.store = st
	return nil
}

// restoreLocked gives a newly registered key its stored account, if the
// state file has one. It reports whether it did.
func (s *Sim) restoreLocked(k *apiKey) bool {
	if s.store == nil {
		return false
	}
	h := keyHash(k.key)
	sa := s.store.parked[h]
	if sa == nil {
		return false
	}
	delete(s.store.parked, h)
	a := k.acct
	a.uid = sa.UID
	l := a.ledgerLocked()
	l.trackDrops = true // storeAccount forgets the encodings of trimmed orders
	l.seq = sa.Seq
	for coin, v := range sa.Balances {
		l.setBalanceLocked(coin, v)
	}
	for sym, v := range sa.Leverage {
		l.leverage[sym] = v
	}
	for _, p := range sa.Positions {
		l.positions[posKey{p.Symbol, p.Idx}] = p.position()
	}
	for _, raw := range sa.Orders {
		var so storedOrder
		_ = json.Unmarshal(raw, &so) // checked when the file was opened
		o := so.order()
		l.addOrderLocked(o)
		switch {
		case o.open() && o.orderType == "Limit" && !o.seeded:
			s.engine.restingN++
		case !o.open() && o.status != statusCreated:
			s.store.encoded[o] = raw
		}
	}
	l.compactLiveLocked()
	for _, raw := range sa.Execs {
		var se storedExec
		_ = json.Unmarshal(raw, &se)
		e := se.exec()
		l.addExecutionLocked(e)
		s.store.encoded[e] = raw
	}
	for _, sr := range sa.Resets {
		r := &accountReset{seq: sr.Seq, ms: sr.Ms}
		for _, m := range sr.Moves {
			r.moves = append(r.moves, walletMove{seq: m.Seq, coin: m.Coin, change: m.Change})
		}
		l.resets = append(l.resets, r)
	}
	if len(l.live) > 0 || s.anyWatchLocked() {
		s.startSweeper()
	}
	return true
}

// HoldsStoredAccount reports whether the state file holds an account of
// apiKey that no key of this run has taken back yet: ProvisionKey would
// restore it rather than open a new one.
func (s *Sim) HoldsStoredAccount(apiKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store != nil && s.store.parked[keyHash(apiKey)] != nil
}

// markChangedLocked records that the ledger changed: the next release of
// Sim.mu writes the state file first.
func (s *Sim) markChangedLocked() {
	if s.store != nil {
		s.store.dirty = true
	}
}

// storeFailed reports whether the state file could not be written: the
// simulator then refuses private requests rather than answer for a change
// that would not survive a crash.
func (s *Sim) storeFailed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store != nil && s.store.failed
}

// saveLocked writes the state file if a change is pending.
func (s *Sim) saveLocked() {
	st := s.store
	if st == nil || !st.dirty {
		return
	}
	f := stateFile{Version: stateVersion, SweptSec: s.engine.sweptSec}
	var err error
	for _, a := range s.accounts {
		if len(a.keys) == 0 || a.ledger == nil {
			continue
		}
		sa, aerr := st.storeAccount(keyHash(a.keys[0].key), a)
		if aerr != nil {
			err = aerr
		}
		f.Accounts = append(f.Accounts, sa)
	}
	for _, sa := range st.parked {
		f.Accounts = append(f.Accounts, *sa)
	}
	sort.Slice(f.Accounts, func(i, j int) bool { return f.Accounts[i].KeyHash < f.Accounts[j].KeyHash })
	if err == nil {
		st.buf.Reset() // written and synced: the next write reuses its memory
		err = f.encode(&st.buf)
	}
	if err == nil {
		err = writeFileDurably(st.path, st.buf.Bytes())
	}
	if err != nil {
		if !st.failed {
			s.log.Error("sim: cannot write the paper state; private requests fail until it is written", "err", err)
		}
		st.failed = true
		return
	}
	st.dirty, st.failed = false, false
}

// writeFileDurably replaces path with b: a temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeFileDurably(path string, b []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, stateTempPattern)
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// storeAccount is the stored form of an account. Final orders and
// executions are encoded once and their encoding reused.
func (st *stateStore) storeAccount(hash string, a *account) (storedAccount, error) {
	l := a.ledger
	// Orders the history no longer keeps (D145) lose their encoding too.
	l.trackDrops = true
	for _, o := range l.dropped {
		delete(st.encoded, o)
	}
	clear(l.dropped)
	l.dropped = l.dropped[:0]
	sa := storedAccount{KeyHash: hash, UID: a.uid, Seq: l.seq, Balances: l.balances, Leverage: l.leverage,
		Orders: make([]json.RawMessage, 0, len(l.orders)), Execs: make([]json.RawMessage, 0, len(l.execs))}
	for _, p := range l.sortedPositionsLocked() {
		sa.Positions = append(sa.Positions, storePosition(p))
	}
	for _, r := range l.resets {
		sr := storedReset{Seq: r.seq, Ms: r.ms}
		for _, m := range r.moves {
			sr.Moves = append(sr.Moves, storedMove{Seq: m.seq, Coin: m.coin, Change: m.change})
		}
		sa.Resets = append(sa.Resets, sr)
	}
	for _, o := range l.orders {
		raw, ok := st.encoded[o]
		if !ok {
			var err error
			if raw, err = json.Marshal(storeOrder(o)); err != nil {
				return sa, err
			}
			if !o.open() && o.status != statusCreated {
				st.encoded[o] = raw
			}
		}
		sa.Orders = append(sa.Orders, raw)
	}
	for _, e := range l.execs {
		raw, ok := st.encoded[e]
		if !ok {
			var err error
			if raw, err = json.Marshal(storeExec(e)); err != nil {
				return sa, err
			}
			st.encoded[e] = raw
		}
		sa.Execs = append(sa.Execs, raw)
	}
	return sa, nil
}

// encode appends the file's JSON to b. The stored orders and executions are copied
// as they are (json.Marshal would scan every byte of them again).
func (f stateFile) encode(b *bytes.Buffer) error {
	fmt.Fprintf(b, `{"version":%d,"swept_sec":%d,"accounts":[`, f.Version, f.SweptSec)
	for i, sa := range f.Accounts {
		if i > 0 {
			b.WriteByte(',')
		}
		orders, execs := sa.Orders, sa.Execs
		sa.Orders, sa.Execs = nil, nil
		head, err := json.Marshal(sa)
		if err != nil {
			return err
		}
		b.Write(head[:len(head)-1]) // without its closing brace
		for _, list := range []struct {
			name string
			raws []json.RawMessage
		}{{"orders", orders}, {"executions", execs}} {
			fmt.Fprintf(b, `,%q:[`, list.name)
			for j, raw := range list.raws {
				if j > 0 {
					b.WriteByte(',')
				}
				b.Write(raw)
			}
			b.WriteByte(']')
		}
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return nil
}

// check decodes every order and execution of a stored account, so a
// damaged file is refused when it is opened, not when a key comes back.
func (sa *storedAccount) check() error {
	for _, raw := range sa.Orders {
		if err := json.Unmarshal(raw, new(storedOrder)); err != nil {
			return err
		}
	}
	for _, raw := range sa.Execs {
		if err := json.Unmarshal(raw, new(storedExec)); err != nil {
			return err
		}
	}
	return nil
}

func storePosition(p *simPosition) storedPosition {
	return storedPosition{
		Symbol: p.symbol, Idx: p.idx, Side: p.side, Size: p.size, AvgPrice: p.avgPrice, Leverage: p.leverage,
		TakeProfit: p.takeProfit, StopLoss: p.stopLoss, CumRealisedPnl: p.cumRealisedPnl,
		CreatedMs: p.createdMs, UpdatedMs: p.updatedMs, Seq: p.seq,
	}
}

func (p storedPosition) position() *simPosition {
	return &simPosition{
		symbol: p.Symbol, idx: p.Idx, side: p.Side, size: p.Size, avgPrice: p.AvgPrice, leverage: p.Leverage,
		takeProfit: p.TakeProfit, stopLoss: p.StopLoss, cumRealisedPnl: p.CumRealisedPnl,
		createdMs: p.CreatedMs, updatedMs: p.UpdatedMs, seq: p.Seq,
	}
}

func storeOrder(o *simOrder) storedOrder {
	return storedOrder{
		Seq: o.seq, Category: o.category, Symbol: o.symbol, OrderID: o.orderID, OrderLinkID: o.orderLinkID,
		Side: o.side, OrderType: o.orderType, TimeInForce: o.timeInForce, Price: o.price, Qty: o.qty,
		CumExecQty: o.cumExecQty, CumExecValue: o.cumExecValue, CumExecFee: o.cumExecFee, FeeCoin: o.feeCoin,
		AvgPrice: o.avgPrice, Status: o.status, RejectReason: o.rejectReason, CancelType: o.cancelType,
		ReduceOnly: o.reduceOnly, PositionIdx: o.positionIdx, LastPriceOnCreated: o.lastPriceOnCreated,
		CreatedMs: o.createdMs, UpdatedMs: o.updatedMs, MarketUnit: o.marketUnit, QuoteQty: o.quoteQty,
		CreateType: o.createType, StopOrderType: o.stopOrderType, TakeProfit: o.takeProfit, StopLoss: o.stopLoss,
		CloseOnTrigger: o.closeOnTrigger, ClosedPnl: o.closedPnl, SlipType: o.slipType, Slip: o.slip, Seeded: o.seeded,
	}
}

func (so storedOrder) order() *simOrder {
	return &simOrder{
		seq: so.Seq, category: so.Category, symbol: so.Symbol, orderID: so.OrderID, orderLinkID: so.OrderLinkID,
		side: so.Side, orderType: so.OrderType, timeInForce: so.TimeInForce, price: so.Price, qty: so.Qty,
		cumExecQty: so.CumExecQty, cumExecValue: so.CumExecValue, cumExecFee: so.CumExecFee, feeCoin: so.FeeCoin,
		avgPrice: so.AvgPrice, status: so.Status, rejectReason: so.RejectReason, cancelType: so.CancelType,
		reduceOnly: so.ReduceOnly, positionIdx: so.PositionIdx, lastPriceOnCreated: so.LastPriceOnCreated,
		createdMs: so.CreatedMs, updatedMs: so.UpdatedMs, marketUnit: so.MarketUnit, quoteQty: so.QuoteQty,
		createType: so.CreateType, stopOrderType: so.StopOrderType, takeProfit: so.TakeProfit, stopLoss: so.StopLoss,
		closeOnTrigger: so.CloseOnTrigger, closedPnl: so.ClosedPnl, slipType: so.SlipType, slip: so.Slip, seeded: so.Seeded,
	}
}

func storeExec(e *simExecution) storedExec {
	return storedExec{
		Seq: e.seq, Category: e.category, Symbol: e.symbol, ExecID: e.execID, OrderID: e.orderID, OrderLinkID: e.orderLinkID,
		Side: e.side, OrderType: e.orderType, OrderPrice: e.orderPrice, OrderQty: e.orderQty, LeavesQty: e.leavesQty,
		ExecPrice: e.execPrice, ExecQty: e.execQty, ExecValue: e.execValue, ExecFee: e.execFee, FeeRate: e.feeRate,
		FeeCurrency: e.feeCurrency, IsMaker: e.isMaker, ExecType: e.execType, MarkPrice: e.markPrice,
		ClosedSize: e.closedSize, ExecPnl: e.execPnl, CreateType: e.createType, StopOrder: e.stopOrder, ExecMs: e.execMs,
	}
}

func (se storedExec) exec() *simExecution {
	return &simExecution{
		seq: se.Seq, category: se.Category, symbol: se.Symbol, execID: se.ExecID, orderID: se.OrderID, orderLinkID: se.OrderLinkID,
		side: se.Side, orderType: se.OrderType, orderPrice: se.OrderPrice, orderQty: se.OrderQty, leavesQty: se.LeavesQty,
		execPrice: se.ExecPrice, execQty: se.ExecQty, execValue: se.ExecValue, execFee: se.ExecFee, feeRate: se.FeeRate,
		feeCurrency: se.FeeCurrency, isMaker: se.IsMaker, execType: se.ExecType, markPrice: se.MarkPrice,
		closedSize: se.ClosedSize, execPnl: se.ExecPnl, createType: se.CreateType, stopOrder: se.StopOrder, execMs: se.ExecMs,
	}
}
