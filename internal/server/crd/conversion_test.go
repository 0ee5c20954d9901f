package crd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// TestConversionTimeout: a webhook that does not answer fails the
// conversion once the timeout passes, and its call does not outlive it.
func TestConversionTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	def, err := api.ParseObject([]byte(`{"metadata":{"name":"crons.example.com"},"spec":{"group":"example.com",
		"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"` + srv.URL + `","caBundle":"` + ca + `"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := decode(def)
	if err != nil {
		t.Fatal(err)
	}
	c := newWebhookConverter(d, d.Spec.Conversion, nil, nil)
	c.timeout = 100 * time.Millisecond
	start := time.Now()
	_, err = c.convert(context.Background(), api.Object{"apiVersion": "example.com/v1", "kind": "Cron", "metadata": map[string]any{"name": "a"}}, "example.com/v2")
	took := time.Since(start)
	want := "Internal error occurred: conversion for example.com/v1, Kind=Cron failed: conversion webhook for , Kind= failed: Post "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("got %v, want %q… context deadline exceeded", err, want)
	}
	if took > 5*time.Second {
		t.Errorf("the conversion took %v, past its timeout of %v", took, c.timeout)
	}
}

// TestConversionReviewVersions: the first version of
// conversionReviewVersions kube knows is sent, and a v1beta1 answer is
// not checked for its uid or kind, as kube never checked them.
func TestConversionReviewVersions(t *testing.T) {
	var sent string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv conversionReview
		_ = json.NewDecoder(r.Body).Decode(&rv)
		sent = rv.APIVersion
		obj := rv.Request.Objects[0]
		obj["apiVersion"] = rv.Request.DesiredAPIVersion
		_ = json.NewEncoder(w).Encode(map[string]any{"response": map[string]any{"uid": "whatever",
			"result": map[string]any{"status": "Success"}, "convertedObjects": []any{obj}}})
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	for _, tt := range []struct {
		versions, sent, err string
	}{
		{`["v9","v1beta1","v1"]`, "apiextensions.k8s.io/v1beta1", ""},
		{`["v1","v1beta1"]`, "apiextensions.k8s.io/v1", "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got , Kind="},
		{`["v9"]`, "", "no supported conversion review versions"},
	} {
		t.Run(tt.versions, func(t *testing.T) {
			sent = ""
			def, err := api.ParseObject([]byte(`{"metadata":{"name":"crons.example.com"},"spec":{"group":"example.com",
				"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":` + tt.versions + `,"clientConfig":{"url":"` + srv.URL + `","caBundle":"` + ca + `"}}}}}`))
			if err != nil {
				t.Fatal(err)
			}
			d, err := decode(def)
			if err != nil {
				t.Fatal(err)
			}
			out, err := newWebhookConverter(d, d.Spec.Conversion, nil, nil).convert(context.Background(), api.Object{"apiVersion": "example.com/v1", "kind": "Cron", "metadata": map[string]any{"name": "a"}}, "example.com/v2")
			if sent != tt.sent {
				t.Errorf("sent a %q review, want %q", sent, tt.sent)
			}
			switch {
			case tt.err == "" && (err != nil || out["apiVersion"] != "example.com/v2"):
				t.Errorf("got %v %v, want the object in example.com/v2", out, err)
			case tt.err != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.err)):
				t.Errorf("got %v, want an error ending %q", err, tt.err)
			}
		})
	}
}
