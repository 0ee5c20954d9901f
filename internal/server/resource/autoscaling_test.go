package resource

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// hpaV2 is a stored v2 HPA with every part v1 keeps in annotations.
const hpaV2 = `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler",
"metadata":{"name":"web","namespace":"default","annotations":{"team":"web"}},
"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":2,"maxReplicas":10,
"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}},
{"type":"Pods","pods":{"metric":{"name":"pps"},"target":{"type":"AverageValue","averageValue":"1k"}}}],
"behavior":{"scaleDown":{"stabilizationWindowSeconds":300,"policies":[{"type":"Percent","value":100,"periodSeconds":15}]}}},
"status":{"desiredReplicas":3,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":40,"averageValue":"200m"}}}],
"conditions":[{"type":"AbleToScale","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"}]}}`

func hpaResources() (v2, v1 *Resource) {
	rs := horizontalPodAutoscalers()
	return rs[0], rs[1]
}

func parse(t testing.TB, s string) api.Object {
	t.Helper()
	o, err := api.ParseObject([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestHPAConversionLeavesInputs: the conversions and the v1 printers'
// view return new objects and leave theirs as they were (the watch cache
// shares its objects between readers).
func TestHPAConversionLeavesInputs(t *testing.T) {
	_, v1 := hpaResources()
	ctx := context.Background()
	stored := parse(t, hpaV2)
	served, err := v1.FromStorage(ctx, stored)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parse(t, hpaV2), stored); diff != "" {
		t.Errorf("FromStorage changed its input (-before +after):\n%s", diff)
	}
	if len(served.Annotations()) != 5 { // team and kube's four
		t.Fatalf("v1 annotations: %v", served.Annotations())
	}
	before := served.DeepCopy()
	if _, err := v1.ToStorage(ctx, served); err != nil {
		t.Fatal(err)
	}
	for _, c := range v1.Columns {
		c.Cell(served)
	}
	if diff := cmp.Diff(before, served); diff != "" {
		t.Errorf("ToStorage or a cell changed its input (-before +after):\n%s", diff)
	}
}

// TestHPAFromStorageKeepsV1: a v1 object reads as itself, as the watch
// cache decodes an object again from the JSON it served.
func TestHPAFromStorageKeepsV1(t *testing.T) {
	_, v1 := hpaResources()
	served, err := v1.FromStorage(context.Background(), parse(t, hpaV2))
	if err != nil {
		t.Fatal(err)
	}
	again, err := v1.FromStorage(context.Background(), served.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(served, again); diff != "" {
		t.Errorf("a v1 object read again (-first +again):\n%s", diff)
	}
}

// BenchmarkHPAConversion is the cost of a v1 watch cache's conversion of
// one event (FromStorage) and of a v1 write's (ToStorage).
func BenchmarkHPAConversion(b *testing.B) {
	_, v1 := hpaResources()
	ctx := context.Background()
	stored := parse(b, hpaV2)
	served, err := v1.FromStorage(ctx, stored)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("FromStorage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v1.FromStorage(ctx, stored); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ToStorage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v1.ToStorage(ctx, served); err != nil {
				b.Fatal(err)
			}
		}
	})
}
