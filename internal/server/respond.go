package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// writeJSON writes v with status code as JSON.
func writeJSON(w http.ResponseWriter, code int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierror.Internal(err))
		return
	}
	writeJSONBytes(w, code, contentType, b)
}

// writeJSONBytes writes encoded JSON b, ending it with a newline as
// json.Encoder does (kube's responses end with one).
func writeJSONBytes(w http.ResponseWriter, code int, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// writeAs writes v in the negotiated media type.
func writeAs(w http.ResponseWriter, code int, out output, v any) {
	switch out.mediaType {
	case mediaProtobuf:
		writeProtobuf(w, code, v)
		return
	case mediaYAML:
	default:
		writeJSON(w, code, mediaJSON, v)
		return
	}
	j, err := json.Marshal(v)
	if err == nil {
		var y []byte
		if y, err = yaml.JSONToYAML(j); err == nil {
			w.Header().Set("Content-Type", mediaYAML)
			w.WriteHeader(code)
			_, _ = w.Write(y)
			return
		}
	}
	writeError(w, apierror.Internal(err))
}

// writeError writes err as a Status with its code (500 unless it is a
// StatusError), with Retry-After when the Status asks for one.
func writeError(w http.ResponseWriter, err error) {
	var se *api.StatusError
	if !errors.As(err, &se) {
		slog.Error("internal error", "err", err)
		se = apierror.Internal(err)
	}
	if d := se.Status.Details; d != nil && d.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
	}
	writeJSON(w, int(se.Status.Code), mediaJSON, se.Status)
}

// writeProtobuf writes v in Kubernetes' protobuf envelope.
func writeProtobuf(w http.ResponseWriter, code int, v any) {
	b, err := encodeProtobuf(v)
	if err != nil {
		writeError(w, apierror.Internal(fmt.Errorf("encoding protobuf: %w", err)))
		return
	}
	w.Header().Set("Content-Type", mediaProtobuf)
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
