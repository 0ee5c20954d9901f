package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/wait"
)

// namespace is where every benchmark object lives.
const namespace = "bench"

// apiClient makes the setup and write requests of a run.
type apiClient struct {
	base string
	hc   *http.Client
	kind kind // what the run writes
	// token is sent as a bearer token, if any.
	token string
}

// maxInFlight bounds the writer's and the setup's concurrent requests.
const maxInFlight = 16

func newAPIClient(p Process, k kind) *apiClient {
	tr := &http.Transport{MaxIdleConnsPerHost: maxInFlight, MaxConnsPerHost: maxInFlight, TLSClientConfig: p.clientTLS()}
	return &apiClient{base: p.URL, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}, kind: k, token: p.Token}
}

func (a *apiClient) close() { a.hc.CloseIdleConnections() }

// authorize sets req's bearer token, if any.
func (a *apiClient) authorize(req *http.Request) {
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
}

// do sends body (if any) as JSON and returns the JSON response body for a
// 2xx status, or an error naming the request and the status.
func (a *apiClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	return a.request(ctx, method, path, "application/json", body)
}

// request is do, accepting a response of type accept.
func (a *apiClient) request(ctx context.Context, method, path, accept string, body []byte) ([]byte, error) {
	return a.send(ctx, method, path, "application/json", accept, body)
}

// send is request with a body of type contentType.
func (a *apiClient) send(ctx context.Context, method, path, contentType, accept string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	a.authorize(req)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return b, &statusError{method: method, path: path, code: resp.StatusCode, body: b}
	}
	return b, nil
}

// statusError is a non-2xx answer.
type statusError struct {
	method, path string
	code         int
	body         []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.code, bytes.TrimSpace(e.body))
}

// ensureNamespace creates the benchmark namespace unless it exists (a
// user whom RBAC lets work in it alone may read it, not create it).
func (a *apiClient) ensureNamespace(ctx context.Context) error {
	if _, err := a.do(ctx, http.MethodGet, "/api/v1/namespaces/"+namespace, nil); err == nil {
		return nil
	}
	body := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + namespace + `"}}`)
	if _, err := a.do(ctx, http.MethodPost, "/api/v1/namespaces", body); err != nil && !isConflict(err) {
		return err
	}
	return a.waitForAccount(ctx)
}

// waitForAccount waits, 10 s at most, for the new namespace's default
// ServiceAccount, which the server makes after the namespace and a Pod's
// admission waits for: a timed phase of pod creates must not spend its
// time there. A user who may not read it does not wait.
func (a *apiClient) waitForAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, err := a.do(ctx, http.MethodGet, "/api/v1/namespaces/"+namespace+"/serviceaccounts/default", nil)
		var se *statusError
		if err == nil || errors.As(err, &se) && se.code == http.StatusForbidden {
			return nil
		}
		if err := wait.Sleep(ctx, 10*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the default ServiceAccount of namespace %s: %w", namespace, err)
		}
	}
}

const configMaps = "/api/v1/namespaces/" + namespace + "/configmaps"

// change writes the object of the given name so that it is of about size
// bytes and carries ts: a PUT of the whole object, or for a kind whose
// admission adds to what is sent (a Pod's token volume), a merge patch of
// its annotations.
func (a *apiClient) change(ctx context.Context, name string, size int, ts time.Time) error {
	path := a.kind.path + "/" + name
	var err error
	if a.kind.patch != nil {
		_, err = a.send(ctx, http.MethodPatch, path, "application/merge-patch+json", "application/json", a.kind.patch(size, ts))
	} else {
		_, err = a.do(ctx, http.MethodPut, path, a.kind.object(name, size, ts))
	}
	return err
}

// configMap is a ConfigMap of about size bytes of JSON whose data holds
// the write time (unix ns) in "ts" and padding in "pad".
func configMap(name string, size int, ts time.Time) []byte {
	return configMapMeta(name, "", size, ts)
}

// configMapMeta is configMap with meta (JSON members, each after a comma)
// added to its metadata.
func configMapMeta(name, meta string, size int, ts time.Time) []byte {
	b := make([]byte, 0, size+len(meta)+128)
	b = append(b, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`...)
	b = append(b, name...)
	b = append(b, `","namespace":"`+namespace+`"`...)
	b = append(b, meta...)
	b = append(b, `},"data":{"ts":"`...)
	b = strconv.AppendInt(b, ts.UnixNano(), 10)
	b = append(b, `","pad":"`...)
	b = appendPad(b, size-len(b)-4)
	return append(b, `"}}`...)
}

// appendPad appends n (if positive) padding bytes that no scan matches.
func appendPad(b []byte, n int) []byte {
	for range max(n, 0) {
		b = append(b, 'x')
	}
	return b
}

// listRevision is the collection's resourceVersion, from a consistent list.
func (a *apiClient) listRevision(ctx context.Context) (int64, error) {
	b, err := a.do(ctx, http.MethodGet, a.kind.path, nil) // from the cache, which this starts
	if err != nil {
		return 0, err
	}
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return 0, fmt.Errorf("decoding the list: %w", err)
	}
	rv, err := strconv.ParseInt(l.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the list's resourceVersion %q: %w", l.Metadata.ResourceVersion, err)
	}
	return rv, nil
}
