"""Bridges between kubelet credential provider plugins and Docker credential helpers."""
