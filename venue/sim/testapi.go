package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Test endpoints (docs/simulator.md "Test endpoints"). They live under /sim/, never under /v5/, answer
// plain JSON (not the Bybit envelope) and refuse any client that is not on
// a loopback address with HTTP 403. Errors are {"error": "..."} with HTTP
// 400 (bad input), 404 (unknown path) or 405 (wrong method).
//
//	POST   /sim/keys    {"read_only": false, "permissions": {"ContractTrade": ["Order","Position"]}, "note": "..."}
//	                    -> {"api_key": "...", "api_secret": "..."}; permissions omitted = the default key's
//	POST   /sim/faults  {"kind": "...", "path": "/v5/...", "every": 1, "count": 3, "delay_ms": 2000, "apply": false}
//	                    -> the stored fault with its id
//	GET    /sim/faults  -> every stored fault with its seen/fired counters
//	DELETE /sim/faults  -> clears them all
//	GET    /sim/orders  -> the orders accepted, in acceptance order ([] until orders exist), at
//	                       least the newest maxOrderRecords of them;
//	                       status is the order's current one ("Created" while not yet applied)
//	POST   /sim/price   {"category": "linear", "symbol": "BTCUSDT", "price": "60000"} (testapi_market.go)
//	POST   /sim/clock   {"advance_ms": 60000} (testapi_market.go)
//
//	POST   /sim/accounts/{api_key}/balances|positions|orders -> account state (account_testapi.go)

// maxOrderRecords is how many accepted orders GET /sim/orders is sure to
// list: between it and twice as many are kept (D145).
const maxOrderRecords = 1024

// orderRecord is one accepted order as GET /sim/orders lists it.
type orderRecord struct {
	OrderID     string `json:"orderId"`
	OrderLinkID string `json:"orderLinkId"`
	APIKey      string `json:"apiKey"`
	Category    string `json:"category"`
	Symbol      string `json:"symbol"`
	Side        string `json:"side"`
	OrderType   string `json:"orderType"`
	Qty         string `json:"qty"`
	Price       string `json:"price"`
	Status      string `json:"status"`
	AcceptedAt  string `json:"acceptedAt"` // RFC 3339 UTC, ms

	order *simOrder // the live order: Status and Price are read from it when listed
}

func writePlainJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func testAPIError(w http.ResponseWriter, status int, msg string) {
	writePlainJSON(w, status, map[string]string{"error": msg})
}

// decodeStrict decodes a JSON body, refusing unknown fields and trailing
// data. An empty body decodes as {}.
func decodeStrict(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (s *Sim) serveTestAPI(w http.ResponseWriter, r *http.Request) {
	if !isLoopbackRequest(r) {
		testAPIError(w, http.StatusForbidden, "test endpoints answer loopback clients only")
		return
	}
	switch r.URL.Path {
	case "/sim/keys":
		if r.Method != http.MethodPost {
			testAPIError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.testCreateKey(w, r)
	case "/sim/faults":
		switch r.Method {
		case http.MethodPost:
			s.testAddFault(w, r)
		case http.MethodGet:
			s.mu.Lock()
			list := s.faults.snapshotLocked()
			s.mu.Unlock()
			writePlainJSON(w, http.StatusOK, list)
		case http.MethodDelete:
			s.mu.Lock()
			s.faults.clearLocked()
			s.mu.Unlock()
			writePlainJSON(w, http.StatusOK, []fault{})
		default:
			testAPIError(w, http.StatusMethodNotAllowed, "use GET, POST or DELETE")
		}
	case "/sim/orders":
		if r.Method != http.MethodGet {
			testAPIError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		s.mu.Lock()
		s.advanceLocked(s.now())
		list := append([]orderRecord{}, s.orders...)
		for i := range list {
			if o := list[i].order; o != nil {
				list[i].Status = o.status
				if o.orderType == "Market" && o.status != statusCreated {
					list[i].Price = fixed(o.price, s.catalog.get(o.category, o.symbol).priceScale)
				}
			}
		}
		s.unlockAndFlush()
		writePlainJSON(w, http.StatusOK, list)
	case "/sim/price":
		if r.Method != http.MethodPost {
			testAPIError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.testSetPrice(w, r)
	case "/sim/clock":
		if r.Method != http.MethodPost {
			testAPIError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		s.testAdvanceClock(w, r)
	default:
		if strings.HasPrefix(r.URL.Path, accountsPrefix) {
			s.serveAccountsTestAPI(w, r)
			return
		}
		if key, ok := strings.CutPrefix(r.URL.Path, "/sim/keys/"); ok && strings.HasSuffix(key, "/permissions") {
			if r.Method != http.MethodPost {
				testAPIError(w, http.StatusMethodNotAllowed, "use POST")
				return
			}
			s.testSetPermissions(w, r, strings.TrimSuffix(key, "/permissions"))
			return
		}
		testAPIError(w, http.StatusNotFound, "no such test endpoint")
	}
}

type createKeyRequest struct {
	ReadOnly    bool                 `json:"read_only"`
	Permissions *map[string][]string `json:"permissions"`
	Note        string               `json:"note"`
}

type createKeyResponse struct {
	APIKey    string `json:"api_key"`
	APISecret string `json:"api_secret"`
}

func (s *Sim) testCreateKey(w http.ResponseWriter, r *http.Request) {
	var req createKeyRequest
	if err := decodeStrict(r, &req); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	perms := defaultPermissions()
	if req.Permissions != nil {
		perms = permissions(*req.Permissions)
	}
	s.mu.Lock()
	k := s.newKeyLocked(req.ReadOnly, perms, req.Note)
	s.mu.Unlock()
	s.log.Debug("sim: key created", "key_id", k.id, "readOnly", req.ReadOnly)
	writePlainJSON(w, http.StatusOK, createKeyResponse{APIKey: k.key, APISecret: k.secret})
}

// testSetPermissions replaces a key's permissions (a human editing the key
// on Bybit), so tests can see a stored key's permissions grow.
// POST /sim/keys/{api_key}/permissions body {"permissions": {...}}.
func (s *Sim) testSetPermissions(w http.ResponseWriter, r *http.Request, apiKey string) {
	var req struct {
		Permissions map[string][]string `json:"permissions"`
	}
	if err := decodeStrict(r, &req); err != nil || req.Permissions == nil {
		testAPIError(w, http.StatusBadRequest, "body must be {\"permissions\": {...}}")
		return
	}
	s.mu.Lock()
	k, ok := s.keys[apiKey]
	if ok {
		k.perms = permissions(req.Permissions).clone()
	}
	s.mu.Unlock()
	if !ok {
		testAPIError(w, http.StatusNotFound, "no such key")
		return
	}
	writePlainJSON(w, http.StatusOK, map[string]any{"api_key": apiKey, "permissions": req.Permissions})
}

func (s *Sim) testAddFault(w http.ResponseWriter, r *http.Request) {
	var f fault
	var req struct {
		Kind    string `json:"kind"`
		Path    string `json:"path"`
		Every   int    `json:"every"`
		Count   int    `json:"count"`
		DelayMs int    `json:"delay_ms"`
		Apply   bool   `json:"apply"`
	}
	if err := decodeStrict(r, &req); err != nil {
		testAPIError(w, http.StatusBadRequest, "bad body: "+err.Error())
		return
	}
	f = fault{Kind: req.Kind, Path: req.Path, Every: req.Every, Count: req.Count, DelayMs: req.DelayMs, Apply: req.Apply}
	if err := f.validate(); err != nil {
		testAPIError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	stored := *s.faults.addLocked(&f)
	s.mu.Unlock()
	s.log.Debug("sim: fault added", "kind", f.Kind, "path", f.Path, "every", f.Every, "count", f.Count)
	writePlainJSON(w, http.StatusOK, stored)
}
