package leaderelection_test

import (
	"context"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/leaderelection"
)

func TestNewChecksConfig(t *testing.T) {
	c, err := client.New(client.ConfigForURL("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	ok := leaderelection.Config{Client: c, Namespace: "ns", Name: "lock", Identity: "me",
		Callbacks: leaderelection.Callbacks{OnStartedLeading: func(context.Context) {}}}
	if _, err := leaderelection.New(ok); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for name, change := range map[string]func(*leaderelection.Config){
		"no identity":                 func(c *leaderelection.Config) { c.Identity = "" },
		"no lease name":               func(c *leaderelection.Config) { c.Name = "" },
		"no OnStartedLeading":         func(c *leaderelection.Config) { c.Callbacks.OnStartedLeading = nil },
		"duration not above deadline": func(c *leaderelection.Config) { c.LeaseDuration = leaderelection.DefaultRenewDeadline },
		"deadline within retry*1.2":   func(c *leaderelection.Config) { c.RetryPeriod = 9 * time.Second },
		"lease shorter than a second": func(c *leaderelection.Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
		},
	} {
		cfg := ok
		change(&cfg)
		if _, err := leaderelection.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
