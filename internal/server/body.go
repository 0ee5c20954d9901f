package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// presizedBody is the largest announced body read into a buffer made
// before its bytes arrive; larger bodies grow as they are read.
const presizedBody = 64 << 10

// presized is the size of the buffer readBody makes for r's body before
// its bytes arrive: its announced length, if small; else 0.
func (s *Server) presized(r *http.Request) int64 {
	if n := r.ContentLength; n > 0 && n <= min(s.cfg.MaxBodyBytes, presizedBody) {
		return n
	}
	return 0
}

// aheadBody is a body readAhead read: its bytes, or why they could not be.
type aheadBody struct {
	bytes.Reader // over b, for a handler that reads r.Body itself
	b            []byte
	err          error
}

func (*aheadBody) Close() error { return nil }

// readBody reads a request body up to the size limit (413 beyond) and
// its deadline (504 beyond, with kube-apiserver's answer to a request
// that outlives its --request-timeout), or returns what readAhead read.
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	if ab, ok := r.Body.(*aheadBody); ok {
		return ab.b, ab.err
	}
	body := http.MaxBytesReader(nil, r.Body, s.cfg.MaxBodyBytes)
	var b []byte
	var err error
	if n := s.presized(r); n > 0 {
		// One allocation of the announced size, which net/http holds the
		// body to (io.ReadAll grows from 512 bytes); bounded, so that a
		// client announcing megabytes it never sends costs little.
		b = make([]byte, n)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = io.ReadAll(body)
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, apierror.TooLarge(s.cfg.MaxBodyBytes)
	case errors.Is(err, errBodyBudget):
		return nil, apierror.TooManyRequests("Too many requests, please try again later.", 1)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, apierror.Timeout("Timeout: request did not complete within the allotted timeout", 0)
	case err != nil:
		return nil, apierror.BadRequest(fmt.Sprintf("reading the request body: %v", err))
	}
	return b, nil
}

// bodyMediaType returns the request's Content-Type without parameters,
// which must be one of accepted (415 otherwise). A body without one is
// JSON where JSON is accepted, as kube-apiserver reads it (kubectl 1.20's
// create sends none), but not from a web page, which says so in Origin:
// a page can send such a body across sites (fetch with a typeless Blob)
// without the preflight a JSON Content-Type requires.
func bodyMediaType(r *http.Request, accepted []string) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.Header.Get("Origin") == "" && slices.Contains(accepted, mediaJSON) {
		return mediaJSON, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(accepted, mt) {
		return "", apierror.UnsupportedMediaType(accepted)
	}
	return mt, nil
}

// objectMediaTypes are the bodies create and update accept.
var objectMediaTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

// readObject decodes a create or update body into an object of kind (a
// protobuf body of another kind is not decoded, only its type read).
func (s *Server) readObject(r *http.Request, kind string) (api.Object, error) {
	mt, err := bodyMediaType(r, objectMediaTypes)
	if err != nil {
		return nil, err
	}
	b, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(mt, b, kind)
	if err == nil {
		auditRequestObject(r, obj)
	}
	return obj, err
}

// decodeObject decodes body b of media type mt into an object, a protobuf
// one only if it is of kind.
func decodeObject(mt string, b []byte, kind string) (api.Object, error) {
	var err error
	switch mt {
	case mediaJSON:
	case mediaProtobuf:
		return decodeProtobuf(b, kind)
	case mediaYAML:
		if b, err = yaml.YAMLToJSON(b); err != nil {
			return nil, apierror.BadRequest(fmt.Sprintf("the body is not valid YAML: %v", err))
		}
	}
	obj, err := api.ParseObject(b)
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("the body is not a JSON object: %v", err))
	}
	return obj, nil
}

// deleteOptions is the part of meta/v1 DeleteOptions the server honours.
// GracePeriodSeconds is read and has no effect: none of the kinds served
// deletes gracefully (kube's pods do), so kube ignores it for them too.
type deleteOptions struct {
	Kind               string `json:"kind"`
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
	Preconditions      *struct {
		UID             *string `json:"uid"`
		ResourceVersion *string `json:"resourceVersion"`
	} `json:"preconditions"`
	OrphanDependents  *bool    `json:"orphanDependents"`
	PropagationPolicy *string  `json:"propagationPolicy"`
	DryRun            []string `json:"dryRun"`
}

// context is r's, a dry run's when the options ask for one.
func (o deleteOptions) context(r *http.Request) context.Context {
	if len(o.DryRun) > 0 {
		return registry.WithDryRun(r.Context())
	}
	return r.Context()
}

// registry returns the options the registry's delete takes.
func (o deleteOptions) registry() registry.DeleteOptions {
	out := registry.DeleteOptions{OrphanDependents: o.OrphanDependents}
	if o.PropagationPolicy != nil {
		out.Propagation = *o.PropagationPolicy
	}
	if o.Preconditions != nil {
		out.Preconditions = registry.Preconditions{UID: o.Preconditions.UID, ResourceVersion: o.Preconditions.ResourceVersion}
	}
	return out
}

// readDeleteOptions reads a delete's DeleteOptions from its body or, when
// it has none, from its query, and validates them as kube-apiserver's
// delete handler does (ValidateDeleteOptions), before anything is read.
func (s *Server) readDeleteOptions(r *http.Request) (deleteOptions, error) {
	var opts deleteOptions
	b, err := s.readBody(r)
	if err != nil {
		return opts, err
	}
	if len(b) == 0 {
		err = deleteOptionsFromQuery(r.URL.Query(), &opts)
	} else {
		err = decodeDeleteOptions(r, b, &opts)
	}
	if err != nil {
		return opts, err
	}
	return opts, validateDeleteOptions(opts)
}

func decodeDeleteOptions(r *http.Request, b []byte, opts *deleteOptions) error {
	mt, err := bodyMediaType(r, objectMediaTypes)
	if err != nil {
		return err
	}
	if mt == mediaProtobuf {
		obj, err := decodeProtobuf(b, "DeleteOptions")
		if err != nil {
			return err
		}
		if k := obj.Kind(); k != "DeleteOptions" {
			return apierror.BadRequest(fmt.Sprintf("the body is a %s, not DeleteOptions", k))
		}
		if b, err = json.Marshal(obj); err != nil {
			return apierror.Internal(err)
		}
	}
	if err := json.Unmarshal(b, opts); err != nil {
		return apierror.BadRequest(fmt.Sprintf("the body is not valid DeleteOptions: %v", err))
	}
	return nil
}

// deleteOptionsFromQuery reads the DeleteOptions a query may carry (dryRun
// is read for every write, by withDryRun).
func deleteOptionsFromQuery(q url.Values, opts *deleteOptions) error {
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return apierror.BadRequest(err.Error())
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("orphanDependents"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return apierror.BadRequest(err.Error())
		}
		opts.OrphanDependents = &b
	}
	if q.Has("propagationPolicy") {
		v := q.Get("propagationPolicy")
		opts.PropagationPolicy = &v
	}
	return nil
}

// validateDeleteOptions is kube's ValidateDeleteOptions, with its messages.
func validateDeleteOptions(opts deleteOptions) error {
	var causes []api.StatusCause
	if p := opts.PropagationPolicy; p != nil {
		if opts.OrphanDependents != nil {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "propagationPolicy",
				fmt.Sprintf("Invalid value: %q: orphanDependents and deletionPropagation cannot be both set", *p)))
		}
		if !slices.Contains([]string{"Foreground", "Background", "Orphan"}, *p) {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueNotSupported, "propagationPolicy",
				fmt.Sprintf(`Unsupported value: %q: supported values: "Foreground", "Background", "Orphan", "nil"`, *p)))
		}
	}
	if c, bad := dryRunCause(opts.DryRun); bad {
		causes = append(causes, c)
	}
	if len(causes) > 0 {
		return apierror.Invalid("meta.k8s.io", "DeleteOptions", "", causes)
	}
	return nil
}
