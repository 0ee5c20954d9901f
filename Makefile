# The one test command (README.md): unit, conformance and end-to-end tests of
# the product module, a bounded run of the request path's fuzzer, then the
# interop module (embedded etcd, client-go, kube's own defaulting, validation
# and strategies, kubectl:
# Debian's when installed and one built from k8s.io/kubectl, against the binary).
# The etcd backend's tests run with -race in their own package; the kubectl and
# client-go package runs without it, since building those with -race would
# double the cold build (they drive the real binary, which has its own -race
# tests in the product module).
GO ?= go
FUZZTIME ?= 60s

.PHONY: test
test:
	$(GO) test -race -timeout 10m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzRequestPath$$' -fuzztime $(FUZZTIME) ./internal/server/
	cd test/interop && $(GO) test -race -timeout 20m ./etcdstore/... ./protobuf/... ./selector/...
	cd test/interop && $(GO) test -timeout 20m . ./admissionplugins/... ./defaulting/... ./hpaconversion/... ./kubevalidation/... ./strategies/...
