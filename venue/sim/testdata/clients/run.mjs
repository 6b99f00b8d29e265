// Runs a real Bybit client library against the simulator and prints one
// JSON object on stdout: {"client": ..., "steps": {name: {ok, ...}}}.
//
//   node run.mjs ccxt|bybit-api|ccxt-paths|bybit-api-paths
//
// Environment (from the simulator's announcement): SIM_REST, SIM_WS_PRIVATE,
// SIM_WS_PUBLIC_LINEAR, SIM_WS_PUBLIC_SPOT, SIM_API_KEY, SIM_API_SECRET. Only the clients' URLs
// are pointed at the simulator; every other option keeps its default.
//
// Each step is run and reported on its own, so one missing endpoint does not
// hide the others. Nothing here decides pass or fail: the Go test
// (venue/sim/clients_test.go) reads the report and checks it against the
// simulator's own state.
import { createRequire } from 'node:module';
import ccxt from 'ccxt';
import { RestClientV5, WebsocketClient } from 'bybit-api';

// Record the frames bybit-api sends on the private stream (the ws package
// as bybit-api itself resolves it), so the Go replay test can send them
// byte for byte where node is missing.
const wsFrames = [];
{
  const requireFromBybit = createRequire(createRequire(import.meta.url).resolve('bybit-api'));
  const WS = requireFromBybit('ws');
  const send = WS.prototype.send;
  WS.prototype.send = function patchedSend(data, ...rest) {
    if (String(this.url).includes('/v5/private')) {
      wsFrames.push({ atMs: Date.now(), data: String(data) });
    }
    return send.call(this, data, ...rest);
  };
}

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    throw new Error(`missing environment variable ${name}`);
  }
  return v;
};

const REST = env('SIM_REST');
const KEY = env('SIM_API_KEY');
const SECRET = env('SIM_API_SECRET');

const steps = {};

async function step(name, fn) {
  try {
    const out = await fn();
    steps[name] = { ok: true, ...(out || {}) };
  } catch (e) {
    steps[name] = { ok: false, error: String(e && e.message ? e.message : e).slice(0, 500) };
  }
}

// bybit-api logs to stdout by default; stdout carries only the report.
const quietLogger = {
  trace: () => {},
  info: (...a) => console.error(...a),
  error: (...a) => console.error(...a),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A limit price well below the market, on tick, so the order rests.
function restingBuyPrice(bid, tick) {
  const p = Math.floor((bid * 0.9) / tick) * tick;
  return p.toFixed(Math.max(0, -Math.floor(Math.log10(tick))));
}

// newCcxt builds ccxt.pro.bybit (ccxt's bybit class with its WebSocket
// methods) with only its URLs pointed at the simulator.
async function newCcxt() {
  const ex = new ccxt.pro.bybit({ apiKey: KEY, secret: SECRET });
  for (const k of Object.keys(ex.urls.api)) {
    if (k !== 'ws') {
      ex.urls.api[k] = REST;
    }
  }
  ex.urls.api.ws.public.linear = env('SIM_WS_PUBLIC_LINEAR');
  ex.urls.api.ws.public.spot = env('SIM_WS_PUBLIC_SPOT');
  ex.urls.api.ws.private.contract = env('SIM_WS_PRIVATE');
  ex.urls.api.ws.private.spot.unified = env('SIM_WS_PRIVATE');
  // ccxt opens plain ws:// URLs (the simulator has no TLS) only through a
  // node:http agent, which this call loads; it changes no option.
  await ex.loadHttpProxyAgent();
  return ex;
}

async function runCcxt() {
  const ex = await newCcxt();
  const symbol = 'BTC/USDT:USDT';
  let limitId;
  await step('loadMarkets', async () => {
    const m = await ex.loadMarkets();
    const mk = m[symbol];
    if (!mk) throw new Error(`market ${symbol} missing`);
    return { markets: Object.keys(m).length, linearId: mk.id, tick: mk.precision.price, step: mk.precision.amount };
  });
  await step('fetchBalance', async () => {
    const b = await ex.fetchBalance();
    return { usdtTotal: b.total.USDT === undefined ? null : String(b.total.USDT) };
  });
  await step('createOrderLimit', async () => {
    const t = await ex.fetchTicker(symbol);
    const price = restingBuyPrice(t.bid, ex.markets[symbol].precision.price);
    const o = await ex.createOrder(symbol, 'limit', 'buy', 0.001, Number(price));
    limitId = o.id;
    return { id: o.id, price };
  });
  await step('createOrderMarket', async () => {
    const o = await ex.createOrder(symbol, 'market', 'buy', 0.002);
    return { id: o.id };
  });
  await step('editOrder', async () => {
    if (!limitId) throw new Error('no limit order to edit');
    const t = await ex.fetchTicker(symbol);
    const price = restingBuyPrice(t.bid * 0.99, ex.markets[symbol].precision.price);
    const o = await ex.editOrder(limitId, symbol, 'limit', 'buy', 0.003, Number(price));
    return { id: o.id, price, qty: '0.003' };
  });
  await step('fetchOpenOrders', async () => {
    await sleep(300);
    const os = await ex.fetchOpenOrders(symbol);
    return { ids: os.map((o) => o.id), amounts: os.map((o) => String(o.amount)) };
  });
  await step('cancelOrder', async () => {
    if (!limitId) throw new Error('no limit order to cancel');
    const o = await ex.cancelOrder(limitId, symbol);
    return { id: o.id };
  });
  await step('fetchPositions', async () => {
    await sleep(300);
    const ps = await ex.fetchPositions([symbol]);
    return { positions: ps.map((p) => ({ symbol: p.symbol, side: p.side, contracts: String(p.contracts) })) };
  });
  await step('setLeverage', async () => {
    const r = await ex.setLeverage(7, symbol);
    return { retCode: r && r.retCode !== undefined ? Number(r.retCode) : null };
  });
  await step('fetchTrades', async () => {
    const ts = await ex.fetchTrades(symbol, undefined, 5);
    return { count: ts.length, prices: ts.map((t) => String(t.price)) };
  });
  await step('fetchTradingFee', async () => {
    const f = await ex.fetchTradingFee(symbol);
    return { maker: String(f.maker), taker: String(f.taker) };
  });
  await step('fetchTradingFees', async () => {
    const fs = await ex.fetchTradingFees();
    return { symbols: Object.keys(fs).sort(), taker: String(fs[symbol].taker) };
  });
  await step('fetchOrderBook', async () => {
    const b = await ex.fetchOrderBook(symbol, 50);
    return { bids: b.bids.length, asks: b.asks.length, nonce: b.nonce === undefined ? null : String(b.nonce) };
  });
  await step('watchOrderBook', async () => {
    // The first answer is the snapshot; a later one has applied a delta.
    const first = await ex.watchOrderBook(symbol, 50);
    const firstTs = first.timestamp;
    let b = first;
    const deadline = Date.now() + 6000;
    while (b.timestamp === firstTs && Date.now() < deadline) {
      b = await ex.watchOrderBook(symbol, 50);
    }
    return {
      firstTimestamp: firstTs, timestamp: b.timestamp, bids: b.bids.length, asks: b.asks.length,
      bestBid: String(b.bids[0][0]), bestAsk: String(b.asks[0][0]),
    };
  });
  await step('watchTrades', async () => {
    const ts = await ex.watchTrades(symbol);
    return { count: ts.length, side: ts[0].side };
  });
  await step('watchPrivate', async () => {
    // Start the private watchers, then buy 0.001 more: each must resolve.
    // watchPositions answers its REST snapshot first; the second call waits
    // for the stream.
    const snapshot = await ex.watchPositions([symbol]);
    // The snapshot is ccxt's live cache: read it before it changes.
    const snapshotContracts = String((snapshot.find((x) => x.symbol === symbol) || {}).contracts);
    const got = {};
    const watch = (name, fn) => fn().then((v) => { got[name] = v; }, (e) => { got[name] = `error: ${e.message}`; });
    const watchers = [
      watch('orders', () => ex.watchOrders(symbol)),
      watch('myTrades', () => ex.watchMyTrades(symbol)),
      watch('positions', () => ex.watchPositions([symbol])),
      watch('balance', () => ex.watchBalance()),
    ];
    await sleep(1000);
    const o = await ex.createOrder(symbol, 'market', 'buy', 0.001);
    await Promise.race([Promise.all(watchers), sleep(8000)]);
    const order = Array.isArray(got.orders) ? got.orders.find((x) => x.id === o.id) : undefined;
    const trade = Array.isArray(got.myTrades) ? got.myTrades.find((x) => x.order === o.id) : undefined;
    const pos = Array.isArray(got.positions) ? got.positions.find((x) => x.symbol === symbol) : undefined;
    return {
      id: o.id,
      orderStatus: order ? order.status : String(got.orders),
      tradeAmount: trade ? String(trade.amount) : String(got.myTrades),
      snapshotContracts,
      positionContracts: pos ? String(pos.contracts) : String(got.positions),
      usdtTotal: got.balance && got.balance.total ? String(got.balance.total.USDT) : String(got.balance),
    };
  });
  await ex.close();
}

// bybit-api answers {retCode, retMsg, result}; a non-zero retCode is a
// failed step.
function must(r) {
  if (!r || Number(r.retCode) !== 0) {
    throw new Error(`retCode ${r && r.retCode} ${r && r.retMsg}`);
  }
  return r.result;
}

// linearPublicStream opens bybit-api's WebsocketClient on the linear
// public stream; pubTypes counts the messages by "family:type" (e.g.
// "tickers:delta").
function linearPublicStream() {
  const pub = new WebsocketClient({ wsUrl: env('SIM_WS_PUBLIC_LINEAR') }, quietLogger);
  const pubTypes = {};
  pub.on('update', (msg) => {
    if (msg && msg.topic) {
      const k = `${msg.topic.split('.')[0]}:${msg.type}`;
      pubTypes[k] = (pubTypes[k] || 0) + 1;
    }
  });
  pub.on('exception', () => {});
  pub.on('error', () => {});
  return { pub, pubTypes };
}

async function runBybitApi() {
  const rest = new RestClientV5({ key: KEY, secret: SECRET, baseUrl: REST });
  const symbol = 'BTCUSDT';
  let limitId;
  let tick = 0.1;
  let bid = 0;

  // The private stream: subscribe first, then place an order and collect
  // the topics it pushes.
  const ws = new WebsocketClient({ key: KEY, secret: SECRET, wsUrl: env('SIM_WS_PRIVATE') }, quietLogger);
  const topics = {};
  ws.on('update', (msg) => {
    if (msg && msg.topic) {
      const t = msg.topic.split('.')[0];
      (topics[t] = topics[t] || []).push(msg.data);
    }
  });
  const acks = [];
  ws.on('response', (msg) => {
    if (msg && msg.op) acks.push({ op: msg.op, success: msg.success });
  });
  ws.on('exception', () => {});
  ws.on('error', () => {});

  await step('getInstrumentsInfo', async () => {
    const res = must(await rest.getInstrumentsInfo({ category: 'linear', symbol }));
    tick = Number(res.list[0].priceFilter.tickSize);
    return { symbols: res.list.map((i) => i.symbol) };
  });
  await step('getWalletBalance', async () => {
    const res = must(await rest.getWalletBalance({ accountType: 'UNIFIED' }));
    const usdt = (res.list[0].coin || []).find((c) => c.coin === 'USDT');
    return { usdtWallet: usdt ? usdt.walletBalance : null };
  });
  await step('wsSubscribe', async () => {
    ws.subscribeV5(['order', 'execution', 'position', 'wallet'], 'linear');
    // Wait for the subscribe ack (the client authenticates first).
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && !acks.some((a) => a.op === 'subscribe')) {
      await sleep(50);
    }
    const sub = acks.find((a) => a.op === 'subscribe');
    if (!sub || !sub.success) throw new Error(`no successful subscribe ack: ${JSON.stringify(acks)}`);
    return { acks: acks.map((a) => `${a.op}:${a.success}`) };
  });
  await step('submitOrderLimit', async () => {
    const t = must(await rest.getTickers({ category: 'linear', symbol }));
    bid = Number(t.list[0].bid1Price);
    const price = restingBuyPrice(bid, tick);
    const res = must(await rest.submitOrder({ category: 'linear', symbol, side: 'Buy', orderType: 'Limit', qty: '0.001', price }));
    limitId = res.orderId;
    return { id: res.orderId, price };
  });
  await step('submitOrderMarket', async () => {
    const res = must(await rest.submitOrder({ category: 'linear', symbol, side: 'Buy', orderType: 'Market', qty: '0.002' }));
    return { id: res.orderId };
  });
  await step('amendOrder', async () => {
    if (!limitId) throw new Error('no limit order to amend');
    const price = restingBuyPrice(bid * 0.99, tick);
    const res = must(await rest.amendOrder({ category: 'linear', symbol, orderId: limitId, qty: '0.003', price }));
    return { id: res.orderId, price, qty: '0.003' };
  });
  await step('getActiveOrders', async () => {
    await sleep(300);
    const res = must(await rest.getActiveOrders({ category: 'linear', symbol }));
    return { ids: res.list.map((o) => o.orderId), qtys: res.list.map((o) => o.qty) };
  });
  await step('cancelOrder', async () => {
    if (!limitId) throw new Error('no limit order to cancel');
    const res = must(await rest.cancelOrder({ category: 'linear', symbol, orderId: limitId }));
    return { id: res.orderId };
  });
  await step('getPositionInfo', async () => {
    await sleep(300);
    const res = must(await rest.getPositionInfo({ category: 'linear', symbol }));
    return { positions: res.list.map((p) => ({ symbol: p.symbol, side: p.side, size: p.size })) };
  });
  await step('setLeverage', async () => {
    must(await rest.setLeverage({ category: 'linear', symbol, buyLeverage: '6', sellLeverage: '6' }));
    return {};
  });
  await step('wsPrivateTopics', async () => {
    const deadline = Date.now() + 5000;
    const want = ['order', 'execution', 'position', 'wallet'];
    while (Date.now() < deadline && !want.every((t) => topics[t])) {
      await sleep(50);
    }
    const got = Object.fromEntries(Object.entries(topics).map(([t, list]) => [t, list.length]));
    const ids = (t) => [...new Set((topics[t] || []).flat().map((o) => o.orderId))];
    const sizes = [...new Set((topics.position || []).flat().filter((p) => p.symbol === symbol).map((p) => p.size))];
    const usdt = (topics.wallet || []).flat().flatMap((w) => w.coin || []).filter((c) => c.coin === 'USDT').map((c) => c.walletBalance);
    return { topics: got, orderIds: ids('order'), execOrderIds: ids('execution'), positionSizes: sizes, walletUSDT: usdt };
  });
  ws.closeAll(true);

  // A public stream through the same client class.
  const { pub, pubTypes } = linearPublicStream();
  await step('wsPublic', async () => {
    pub.subscribeV5(['orderbook.50.BTCUSDT', 'publicTrade.BTCUSDT', 'tickers.BTCUSDT'], 'linear');
    const deadline = Date.now() + 6000;
    while (Date.now() < deadline && !(pubTypes['orderbook:delta'] && pubTypes['publicTrade:snapshot'])) {
      await sleep(50);
    }
    return { messages: pubTypes };
  });
  pub.closeAll(true);
}

// The further paths (docs/simulator.md): funding history, open interest,
// batch create, the ledger and the kline stream through ccxt.
async function runCcxtPaths() {
  const ex = await newCcxt();
  const symbol = 'BTC/USDT:USDT';
  await step('loadMarkets', async () => {
    const m = await ex.loadMarkets();
    return { linearId: m[symbol].id };
  });
  await step('fetchFundingRateHistory', async () => {
    const rs = await ex.fetchFundingRateHistory(symbol, undefined, 5);
    return { count: rs.length, timestamps: rs.map((r) => r.timestamp), rates: rs.map((r) => String(r.fundingRate)) };
  });
  await step('fetchOpenInterest', async () => {
    const oi = await ex.fetchOpenInterest(symbol);
    return { amount: String(oi.openInterestAmount), timestamp: oi.timestamp };
  });
  await step('createOrders', async () => {
    const t = await ex.fetchTicker(symbol);
    const tick = ex.markets[symbol].precision.price;
    const p1 = restingBuyPrice(t.bid, tick);
    const p2 = restingBuyPrice(t.bid * 0.98, tick);
    const os = await ex.createOrders([
      { symbol, type: 'limit', side: 'buy', amount: 0.001, price: Number(p1) },
      { symbol, type: 'limit', side: 'buy', amount: 0.001, price: Number(p2) },
      { symbol, type: 'market', side: 'buy', amount: 0.002 },
    ]);
    return { ids: os.map((o) => o.id), prices: [p1, p2] };
  });
  await step('fetchLedger', async () => {
    await sleep(300);
    // Close the position first, so the ledger holds a fee and a PnL.
    await ex.createOrder(symbol, 'market', 'sell', 0.002, undefined, { reduceOnly: true });
    await sleep(300);
    const es = await ex.fetchLedger('USDT');
    const newest = es.reduce((a, b) => (b.timestamp > a.timestamp ? b : a), es[0]);
    return {
      count: es.length, types: [...new Set(es.map((e) => e.type))],
      after: newest ? String(newest.after) : null, amounts: es.map((e) => String(e.amount)),
    };
  });
  await step('watchOHLCV', async () => {
    const first = await ex.watchOHLCV(symbol, '1m');
    const c = first[first.length - 1];
    return { count: first.length, timestamp: c[0], open: String(c[1]), close: String(c[4]) };
  });
  await ex.close();
}

// The further paths through bybit-api: batch amend and cancel, closed PnL,
// the transaction log, risk limits, mark and index klines, switch-mode,
// and the public ticker (snapshot, then deltas) and kline topics.
async function runBybitApiPaths() {
  const rest = new RestClientV5({ key: KEY, secret: SECRET, baseUrl: REST });
  const category = 'linear';
  const symbol = 'BTCUSDT';
  let tick = 0.1;
  let closeId;
  await step('batchSubmitOrders', async () => {
    const info = must(await rest.getInstrumentsInfo({ category, symbol }));
    tick = Number(info.list[0].priceFilter.tickSize);
    must(await rest.submitOrder({ category, symbol, side: 'Buy', orderType: 'Market', qty: '0.003' }));
    const t = must(await rest.getTickers({ category, symbol }));
    const bid = Number(t.list[0].bid1Price);
    const r = await rest.batchSubmitOrders(category, [
      { symbol, side: 'Buy', orderType: 'Limit', qty: '0.001', price: restingBuyPrice(bid, tick), orderLinkId: 'ba-1' },
      { symbol, side: 'Buy', orderType: 'Limit', qty: '0.001', price: restingBuyPrice(bid * 0.98, tick), orderLinkId: 'ba-2' },
      { symbol, side: 'Buy', orderType: 'Limit', qty: '0.001', price: restingBuyPrice(bid, tick), orderLinkId: 'ba-1' },
    ]);
    must(r);
    return { ids: r.result.list.map((o) => o.orderId), codes: r.retExtInfo.list.map((x) => x.code) };
  });
  await step('batchAmendOrders', async () => {
    const r = await rest.batchAmendOrders(category, [
      { symbol, orderLinkId: 'ba-1', qty: '0.002' },
      { symbol, orderLinkId: 'ba-2', qty: '0.003' },
    ]);
    must(r);
    await sleep(300);
    const open = must(await rest.getActiveOrders({ category, symbol }));
    return { codes: r.retExtInfo.list.map((x) => x.code), qtys: open.list.map((o) => `${o.orderLinkId}:${o.qty}`).sort() };
  });
  await step('batchCancelOrders', async () => {
    const r = await rest.batchCancelOrders(category, [{ symbol, orderLinkId: 'ba-1' }, { symbol, orderLinkId: 'ba-2' }]);
    must(r);
    await sleep(300);
    const open = must(await rest.getActiveOrders({ category, symbol }));
    return { codes: r.retExtInfo.list.map((x) => x.code), ids: r.result.list.map((o) => o.orderId), open: open.list.length };
  });
  await step('getClosedPnL', async () => {
    const c = must(await rest.submitOrder({ category, symbol, side: 'Sell', orderType: 'Market', qty: '0.003', reduceOnly: true }));
    closeId = c.orderId;
    await sleep(300);
    const res = must(await rest.getClosedPnL({ category, symbol }));
    return { closeId, rows: res.list.map((r) => ({ orderId: r.orderId, closedSize: r.closedSize, closedPnl: r.closedPnl })) };
  });
  await step('getTransactionLog', async () => {
    const res = must(await rest.getTransactionLog({ accountType: 'UNIFIED', currency: 'USDT' }));
    return { count: res.list.length, newestBalance: res.list.length ? res.list[0].cashBalance : null, types: res.list.map((r) => r.type) };
  });
  await step('getRiskLimit', async () => {
    const res = must(await rest.getRiskLimit({ category, symbol }));
    return { rows: res.list.length, maintenanceMargin: res.list[0].maintenanceMargin, maxLeverage: res.list[0].maxLeverage };
  });
  await step('getMarkPriceKline', async () => {
    const res = must(await rest.getMarkPriceKline({ category, symbol, interval: '1', limit: 3 }));
    return { rows: res.list.length, fields: res.list[0].length };
  });
  await step('getIndexPriceKline', async () => {
    const res = must(await rest.getIndexPriceKline({ category, symbol, interval: '1', limit: 3 }));
    return { rows: res.list.length, fields: res.list[0].length };
  });
  await step('switchPositionMode', async () => {
    const hedge = await rest.switchPositionMode({ category, symbol, mode: 3 });
    const oneWay = await rest.switchPositionMode({ category, symbol, mode: 0 });
    return { hedge: Number(hedge.retCode), hedgeMsg: hedge.retMsg, oneWay: Number(oneWay.retCode) };
  });

  const { pub, pubTypes } = linearPublicStream();
  await step('wsTickersKline', async () => {
    pub.subscribeV5(['tickers.BTCUSDT', 'kline.1.BTCUSDT'], 'linear');
    const deadline = Date.now() + 6000;
    while (Date.now() < deadline && !(pubTypes['tickers:delta'] && pubTypes['kline:snapshot'])) {
      await sleep(50);
    }
    return { messages: pubTypes };
  });
  pub.closeAll(true);
}

const which = process.argv[2];
const runners = { ccxt: runCcxt, 'bybit-api': runBybitApi, 'ccxt-paths': runCcxtPaths, 'bybit-api-paths': runBybitApiPaths };
if (!runners[which]) {
  console.error(`usage: node run.mjs ${Object.keys(runners).join('|')}`);
  process.exit(2);
}
await runners[which]();
process.stdout.write(JSON.stringify({ client: which, steps, wsFrames }) + '\n');
process.exit(0);
