package sim

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// directTransport is the REST way into an in-process simulator: it serves
// each request by calling the simulator's handler on a goroutine of its
// own and hands back what the handler wrote, without a connection, HTTP/1.1
// framing or a server goroutine per connection (docs/decisions.md D211).
// It answers only URLs of InProcessHost, as DialContext does. What differs
// from a connection: the body is the whole answer, buffered; a request
// whose context ends first gets the context's error while the handler
// runs on (as a server goes on with a request whose client left); a
// handler that panics is a failed request (as net/http's server drops the
// connection of one), never a panic of the caller.
type directTransport struct {
	handler http.Handler
	log     *slog.Logger
	closed  <-chan struct{}
}

// RoundTrip implements http.RoundTripper.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if req.URL == nil || req.URL.Scheme != "http" || !strings.EqualFold(req.URL.Hostname(), InProcessHost) {
		return nil, fmt.Errorf("the in-process simulator answers only http://%s", InProcessHost)
	}
	// A caller already gone sends nothing, as http.Transport never dials
	// for one.
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	select {
	case <-t.closed:
		return nil, fmt.Errorf("the in-process simulator is closed")
	default:
	}
	in, err := serverRequest(req)
	if err != nil {
		return nil, err
	}
	w := &bufferedResponse{header: http.Header{}}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				// http.ErrAbortHandler is a handler dropping its
				// connection on purpose; net/http does not log it either.
				if v != http.ErrAbortHandler {
					t.log.Error("sim: panic serving an in-process request", "path", in.URL.Path, "panic", fmt.Sprint(v))
				}
				done <- fmt.Errorf("the in-process simulator failed the request")
			}
		}()
		t.handler.ServeHTTP(w, in)
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return w.response(req), nil
}

// serverRequest is req as a server receives it: its body read whole (a
// handler may read it on after the caller gave up), its header keys in
// canonical form, the URL reduced to path and query, and the host and
// remote address set.
func serverRequest(req *http.Request) (*http.Request, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
	}
	in := req.Clone(req.Context())
	in.Header = make(http.Header, len(req.Header))
	for k, v := range req.Header {
		ck := http.CanonicalHeaderKey(k)
		in.Header[ck] = append(in.Header[ck], v...)
	}
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.ContentLength = int64(len(body))
	in.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RemoteAddr = inProcessAddr{}.String()
	in.Proto, in.ProtoMajor, in.ProtoMinor = "HTTP/1.1", 1, 1
	return in, nil
}

// bufferedResponse is the http.ResponseWriter of a directTransport
// request: it keeps the status, the header as it stood at WriteHeader, and
// the body.
type bufferedResponse struct {
	header http.Header
	sent   http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.status != 0 || code < 200 { // informational codes are not the answer
		return
	}
	w.status = code
	w.sent = w.header.Clone()
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// response is what the handler wrote, as the client's answer to req.
func (w *bufferedResponse) response(req *http.Request) *http.Response {
	w.WriteHeader(http.StatusOK)
	if w.sent.Get("Content-Type") == "" && w.body.Len() > 0 {
		w.sent.Set("Content-Type", http.DetectContentType(w.body.Bytes()))
	}
	body := io.ReadCloser(io.NopCloser(bytes.NewReader(w.body.Bytes())))
	if req.Method == http.MethodHead {
		body = http.NoBody // a HEAD answer carries no body
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          body,
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}
}
