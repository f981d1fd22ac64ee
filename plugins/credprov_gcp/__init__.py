"""auth-provider-gcp: Google Artifact Registry / Container Registry credentials for the kubelet.

A drop-in replacement for cloud-provider-gcp's ``auth-provider-gcp``, built on
:mod:`credprov.sdk`. ``main`` and ``flags`` are the warm path (standard library and the SDK
only); ``plugin`` and the modules it imports run on a cache miss and need the ``gcp`` extra
(google-auth, requests). See README.md in this directory.
"""
