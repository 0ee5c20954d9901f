package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pagedList answers lists of five things, two a page, at resourceVersion
// 100; expireAt makes the page with that continue token expire.
func pagedList(expireAt string) func(int, call) reply {
	return func(_ int, c call) reply {
		q, _ := url.ParseQuery(c.Query)
		start := 0
		switch cont := q.Get("continue"); {
		case cont == expireAt && cont != "":
			return reply{code: 410, body: `{"kind":"Status","status":"Failure","reason":"Expired","code":410,"message":"The provided continue parameter is too old"}`}
		case cont != "":
			fmt.Sscanf(cont, "from-%d", &start)
		}
		end := 5
		next := ""
		if q.Get("limit") != "" && start+2 < 5 {
			end, next = start+2, fmt.Sprintf("from-%d", start+2)
		}
		var items []string
		for i := start; i < end; i++ {
			items = append(items, fmt.Sprintf(`{"metadata":{"name":"t%d","resourceVersion":"%d"}}`, i, 90+i))
		}
		return reply{body: fmt.Sprintf(`{"kind":"ThingList","metadata":{"resourceVersion":"100","continue":%q},"items":[%s]}`, next, strings.Join(items, ","))}
	}
}

func names(items []*thing) string {
	var s []string
	for _, t := range items {
		s = append(s, t.GetName())
	}
	return strings.Join(s, ",")
}

func TestListAllPages(t *testing.T) {
	f, c := newFakeServer(t, pagedList(""))
	items, rv, err := NewResource[*thing](c, things, "").ListAll(context.Background(),
		ListOptions{Limit: 2, LabelSelector: "app=x", ResourceVersion: "0", ResourceVersionMatch: "NotOlderThan"})
	if err != nil {
		t.Fatal(err)
	}
	if names(items) != "t0,t1,t2,t3,t4" || rv != "100" {
		t.Errorf("got %s at %s", names(items), rv)
	}
	queries := f.queries()
	want := []string{
		"labelSelector=app%3Dx&limit=2&resourceVersion=0&resourceVersionMatch=NotOlderThan",
		"continue=from-2&labelSelector=app%3Dx&limit=2",
		"continue=from-4&labelSelector=app%3Dx&limit=2",
	}
	if diff := cmp.Diff(want, queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

func TestListAllRelistsWhenAPageExpires(t *testing.T) {
	f, c := newFakeServer(t, pagedList("from-2"))
	items, rv, err := NewResource[*thing](c, things, "").ListAll(context.Background(), ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if names(items) != "t0,t1,t2,t3,t4" || rv != "100" {
		t.Errorf("got %s at %s (a page repeated or lost?)", names(items), rv)
	}
	queries := f.queries()
	want := []string{"limit=500&resourceVersion=7", "continue=from-2&limit=500", "resourceVersion=7"}
	if diff := cmp.Diff(want, queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
}

func TestListAllFirstPageExpired(t *testing.T) {
	_, c := newFakeServer(t, func(int, call) reply {
		return reply{code: 410, body: `{"kind":"Status","status":"Failure","reason":"Expired","code":410}`}
	})
	if _, _, err := NewResource[*thing](c, things, "").ListAll(context.Background(), ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Exact"}); !IsExpired(err) {
		t.Errorf("err = %v: an expired first page is the caller's to handle", err)
	}
}

// queries returns the query strings the server saw.
func (f *fakeServer) queries() []string {
	var qs []string
	for _, c := range f.seen() {
		qs = append(qs, c.Query)
	}
	return qs
}

// ListPages asks for the next page once the current page's metadata is
// read, before its items: the server here holds the first page's items
// back until the second page is asked for.
func TestListPagesAsksForTheNextPageEarly(t *testing.T) {
	secondAsked := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("continue") == "" {
			fmt.Fprint(w, `{"kind":"ThingList","metadata":{"resourceVersion":"100","continue":"p2"},"items":[`)
			w.(http.Flusher).Flush()
			select {
			case <-secondAsked:
			case <-time.After(10 * time.Second): // the test fails below
			}
			fmt.Fprint(w, `{"metadata":{"name":"a"}}]}`)
			return
		}
		close(secondAsked)
		fmt.Fprint(w, `{"kind":"ThingList","metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"b"}}]}`)
	}))
	defer srv.Close()
	c, err := New(ConfigForURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	start := time.Now()
	rv, err := NewResource[*thing](c, things, "ns").ListPages(context.Background(), ListOptions{ResourceVersion: "0"}, func(items []*thing) error {
		got = append(got, names(items))
		return nil
	})
	if err != nil || rv != "100" {
		t.Fatalf("rv %q, err %v", rv, err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the second page was asked for only after the first ended (%v)", d)
	}
}

// A page that fails ends ListPages with its error, after the pages before
// it, and the page asked for ahead is cancelled.
func TestListPagesStopsAtAFailedPage(t *testing.T) {
	_, c := newFakeServer(t, pagedList("from-4"))
	var got []string
	_, err := NewResource[*thing](c, things, "ns").ListPages(context.Background(), ListOptions{}, func(items []*thing) error {
		got = append(got, names(items))
		return nil
	})
	if !IsExpired(err) || len(got) != 2 {
		t.Errorf("pages %v, err %v: want two pages, then Expired", got, err)
	}
	stop := errors.New("enough")
	_, err = NewResource[*thing](c, things, "ns").ListPages(context.Background(), ListOptions{}, func([]*thing) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("err %v, want the page function's", err)
	}
}
