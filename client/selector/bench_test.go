package selector_test

import (
	"testing"

	"github.com/listwatch/listwatch/client/selector"
)

// Matches runs once per object per watcher on the server's watch path.

var podLabels = map[string]string{
	"app": "web", "tier": "front", "pod-template-hash": "5d4b8c9f7", "app.kubernetes.io/managed-by": "helm",
}

func BenchmarkLabelsMatches(b *testing.B) {
	s, err := selector.ParseLabels("app=web,tier in (front,cache),!canary")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !s.Matches(podLabels) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkFieldsMatches(b *testing.B) {
	s, err := selector.ParseFields("metadata.namespace=default,metadata.name!=web-0")
	if err != nil {
		b.Fatal(err)
	}
	fields := map[string]string{"metadata.name": "web-1", "metadata.namespace": "default"}
	b.ReportAllocs()
	for b.Loop() {
		if !s.Matches(fields) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkParseLabels(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := selector.ParseLabels("app=web,tier in (front,cache),!canary"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseFields(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := selector.ParseFields("metadata.namespace=default,metadata.name!=web-0"); err != nil {
			b.Fatal(err)
		}
	}
}
