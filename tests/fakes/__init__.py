"""Loopback fakes of the clouds the plugins talk to, for tests and benchmarks.

:mod:`tests.fakes.server` is a scripted HTTP server; :mod:`tests.fakes.gcp` the GCE metadata
server and STS on top of it; :mod:`tests.fakes.acr` a fake Azure (IMDS, AAD, identity
bindings, an ACR login server) with TLS; :mod:`tests.fakes.ecr` moto's ECR and STS behind
real HTTP; :mod:`tests.fakes.tls` a CA made at test time whose certificates let the others
serve HTTPS. Nothing under ``plugins/`` or ``credprov/`` imports them.
"""
