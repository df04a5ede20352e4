// The CustomResourceDefinitions of the neighbours the cluster tests install beside the
// operator, taken from their own Go modules (tests/support/neighbour_crds.py): the versions
// pinned here, go.sum checking what the proxy serves. Nothing is built from this module.
module c5c3.io/glance-operator/hack/crds

go 1.26.8

require github.com/prometheus-operator/prometheus-operator v0.85.0
