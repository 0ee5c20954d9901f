package crd

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/api"
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
	c := newWebhookConverter(d, d.Spec.Conversion, nil)
	c.timeout = 100 * time.Millisecond
	start := time.Now()
	_, err = c.convert(api.Object{"apiVersion": "example.com/v1", "kind": "Cron", "metadata": map[string]any{"name": "a"}}, "example.com/v2")
	took := time.Since(start)
	want := "Internal error occurred: conversion for example.com/v1, Kind=Cron failed: conversion webhook for , Kind= failed: Post "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("got %v, want %q… context deadline exceeded", err, want)
	}
	if took > 5*time.Second {
		t.Errorf("the conversion took %v, past its timeout of %v", took, c.timeout)
	}
}
