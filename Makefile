# The one test command (README.md): unit, conformance and end-to-end tests of
# the product module and of the client library's module (client/), a bounded
# run of the request path's fuzzer, then the interop module (embedded etcd,
# client-go, kube's own defaulting, validation and strategies, kubectl:
# Debian's when installed and one built from k8s.io/kubectl, against the binary).
# The etcd backend's tests run with -race (its watches are goroutines of ours);
# the other interop packages run without it: they compare encodings or drive
# the real binary, whose own -race tests are in the product module, and
# building client-go and k8s.io/api with -race would double the cold build.
GO ?= go
FUZZTIME ?= 60s

.PHONY: test
test:
	$(GO) test -race -timeout 10m ./...
	cd client && $(GO) test -race -timeout 10m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzRequestPath$$' -fuzztime $(FUZZTIME) ./internal/server/
	cd test/interop && $(GO) test -race -timeout 20m ./etcdstore/...
	cd test/interop && $(GO) test -timeout 20m . ./admissionplugins/... ./defaulting/... ./eviction/... ./hpaconversion/... ./kubevalidation/... ./protobuf/... ./selector/... ./strategies/...
