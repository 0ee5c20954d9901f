# The one test command (README.md): unit, conformance and end-to-end tests of
# the product module, then the interop module (embedded etcd, client-go, kubectl:
# Debian's when installed and one built from k8s.io/kubectl, against the binary).
GO ?= go

.PHONY: test
test:
	$(GO) test -race -timeout 10m ./...
	cd test/interop && $(GO) test -race -timeout 20m ./...
