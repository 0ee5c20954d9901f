module github.com/listwatch/listwatch/client

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	golang.org/x/term v0.47.0
	google.golang.org/protobuf v1.36.12
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
