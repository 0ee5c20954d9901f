// Package openapi serves the OpenAPI documents of the server's resources as
// kube-apiserver does, for kubectl: /openapi/v2 (Swagger 2.0, as JSON or as
// the gnostic protobuf kubectl downloads for client-side validation and
// strategic merge patches), /openapi/v3 (an index of group-versions, each
// with a hash) and /openapi/v3/<api/v1|apis/group/version> (one OpenAPI v3
// document per group-version, which kubectl reads to decide on server-side
// field validation and for explain).
//
// Documents are generated from the catalogue: every resource's paths and
// operations with the query parameters kube documents, and its kind's Schema
// under components (definitions in v2) with x-kubernetes-group-version-kind.
// They are built on the first request after the catalogue changes and then
// served from memory with an ETag (the SHA-512 of the JSON, as kube), so a
// client revalidates with If-None-Match and gets 304; a v3 document fetched
// with the index's hash is immutable, and a stale hash redirects to the
// current one.
//
// A Handler is safe for concurrent use.
package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/server/resource"
)

// KubeVersion is the Kubernetes release whose API the server serves: the
// documents describe it and /version says it.
const KubeVersion = "v1.37.2"

// Media types of the v2 document in protobuf: kubectl asks for the first.
const (
	mediaV2ProtobufOld = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaV2Protobuf    = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	mediaJSON          = "application/json"
)

// Catalog is the subset of resource.Catalog the handler uses.
type Catalog interface {
	All() []*resource.Resource
	Generation() (uint64, <-chan struct{})
}

var _ Catalog = (*resource.Catalog)(nil)

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/....
type Handler struct {
	catalog Catalog

	mu sync.Mutex
	// guarded by mu:
	docs  *documents
	built uint64 // the catalogue generation docs were built from
}

// New returns a Handler serving the documents of catalog's resources.
func New(catalog Catalog) *Handler { return &Handler{catalog: catalog} }

// documents are the encoded documents of one catalogue generation.
type documents struct {
	modified time.Time
	v2JSON   encoded
	v2Proto  encoded
	v3Index  encoded
	v3       map[string]encoded // by "api/v1" or "apis/<group>/<version>"
}

// encoded is one document's bytes and their entity tag.
type encoded struct {
	body []byte
	etag string // unquoted
}

func encode(body []byte) encoded {
	return encoded{body: body, etag: fmt.Sprintf("%X", sha512.Sum512(body))}
}

// current returns the documents of the catalogue as it is now, building
// them if it changed since they were last built.
func (h *Handler) current() (*documents, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	gen, _ := h.catalog.Generation()
	if h.docs != nil && h.built == gen {
		return h.docs, nil
	}
	docs, err := build(h.catalog.All())
	if err != nil {
		return nil, err
	}
	h.docs, h.built = docs, gen
	return docs, nil
}

// build encodes every document for rs.
func build(rs []*resource.Resource) (*documents, error) {
	d := &documents{modified: time.Now(), v3: map[string]encoded{}}
	v2, err := json.Marshal(v2Document(rs))
	if err != nil {
		return nil, fmt.Errorf("encoding the v2 document: %w", err)
	}
	d.v2JSON = encode(v2)
	pb, err := v2Protobuf(v2)
	if err != nil {
		return nil, err
	}
	// The protobuf form shares the JSON's entity tag, as in kube (Vary: Accept).
	d.v2Proto = encoded{body: pb, etag: d.v2JSON.etag}
	index := map[string]any{}
	for gv, group := range byGroupVersion(rs) {
		b, err := json.Marshal(v3Document(group))
		if err != nil {
			return nil, fmt.Errorf("encoding the v3 document of %s: %w", gv, err)
		}
		d.v3[gv] = encode(b)
		index[gv] = map[string]any{"serverRelativeURL": relativeURL(gv, d.v3[gv].etag)}
	}
	b, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return nil, fmt.Errorf("encoding the v3 index: %w", err)
	}
	d.v3Index = encode(b)
	return d, nil
}

// byGroupVersion groups resources by their v3 document's name.
func byGroupVersion(rs []*resource.Resource) map[string][]*resource.Resource {
	out := map[string][]*resource.Resource{}
	for _, r := range rs {
		gv := "api/" + r.Version
		if r.Group != "" {
			gv = "apis/" + r.Group + "/" + r.Version
		}
		out[gv] = append(out[gv], r)
	}
	return out
}

func relativeURL(gv, etag string) string {
	return "/openapi/v3/" + gv + "?" + url.Values{"hash": {etag}}.Encode()
}

// ServeHTTP serves the documents.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	docs, err := h.current()
	if err != nil {
		http.Error(w, "building the OpenAPI documents: "+err.Error(), http.StatusInternalServerError)
		return
	}
	switch p := r.URL.Path; {
	case p == "/openapi/v2":
		serveV2(w, r, docs)
	case p == "/openapi/v3":
		serve(w, r, docs, mediaJSON, docs.v3Index)
	case strings.HasPrefix(p, "/openapi/v3/"):
		serveV3(w, r, docs, strings.TrimPrefix(p, "/openapi/v3/"))
	default:
		http.NotFound(w, r)
	}
}

// serveV2 answers in the first form the client accepts.
func serveV2(w http.ResponseWriter, r *http.Request, docs *documents) {
	w.Header().Add("Vary", "Accept")
	for _, mt := range acceptedTypes(r.Header.Get("Accept")) {
		switch mt {
		case mediaJSON, "application/*", "*/*":
			serve(w, r, docs, mediaJSON, docs.v2JSON)
			return
		case mediaV2ProtobufOld, mediaV2Protobuf:
			serve(w, r, docs, mediaV2Protobuf, docs.v2Proto)
			return
		}
	}
	http.Error(w, "only JSON and protobuf are served", http.StatusNotAcceptable)
}

// serveV3 answers one group-version's document, in JSON.
func serveV3(w http.ResponseWriter, r *http.Request, docs *documents, gv string) {
	doc, ok := docs.v3[gv]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Add("Vary", "Accept")
	if !acceptsJSON(r.Header.Get("Accept")) {
		http.Error(w, "only JSON is served", http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != doc.etag {
			http.Redirect(w, r, relativeURL(gv, doc.etag), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serve(w, r, docs, mediaJSON, doc)
}

// serve writes a document with its entity tag; http.ServeContent answers
// If-None-Match with 304.
func serve(w http.ResponseWriter, r *http.Request, docs *documents, contentType string, doc encoded) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", strconv.Quote(doc.etag))
	http.ServeContent(w, r, "", docs.modified, bytes.NewReader(doc.body))
}

// acceptedTypes lists an Accept header's media types in order, without
// parameters. Parsed by hand: the protobuf type has an '@', which
// mime.ParseMediaType rejects.
func acceptedTypes(header string) []string {
	if strings.TrimSpace(header) == "" {
		return []string{"*/*"}
	}
	var out []string
	for part := range strings.SplitSeq(header, ",") {
		mt, _, _ := strings.Cut(part, ";")
		out = append(out, strings.ToLower(strings.TrimSpace(mt)))
	}
	return out
}

func acceptsJSON(header string) bool {
	for _, mt := range acceptedTypes(header) {
		if mt == mediaJSON || mt == "application/*" || mt == "*/*" {
			return true
		}
	}
	return false
}
