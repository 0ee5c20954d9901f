package selector_test

import (
	"fmt"

	"github.com/listwatch/listwatch/client/selector"
)

func ExampleParseLabels() {
	s, err := selector.ParseLabels("tier in (front, cache), app=web, !canary")
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(s.Matches(map[string]string{"app": "web", "tier": "front"}))
	fmt.Println(s.Matches(map[string]string{"app": "web", "tier": "front", "canary": "true"}))
	_, err = selector.ParseLabels("app=web,")
	fmt.Println(err)
	// Output:
	// app=web,!canary,tier in (cache,front)
	// true
	// false
	// invalid label selector "app=web,": found end of string, expected '!' or a key after ','
}

func ExampleParseFields() {
	s, err := selector.ParseFields("metadata.namespace=default,metadata.name=" + selector.EscapeFieldValue("odd,name"))
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(s.Keys())
	fmt.Println(s.RequiresExactMatch("metadata.name"))
	fmt.Println(s.Matches(map[string]string{"metadata.namespace": "default", "metadata.name": "odd,name"}))
	// Output:
	// metadata.name=odd\,name,metadata.namespace=default
	// [metadata.name metadata.namespace]
	// odd,name true
	// true
}
