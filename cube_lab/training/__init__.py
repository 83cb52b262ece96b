"""Distributed training: job specs, the local launcher, Kubernetes manifests, metrics."""
