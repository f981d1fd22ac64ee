"""Self-contained plugin bundles for nodes without Python, and their installer image.

* :mod:`credprov.bundle.build`: ``credprov bundle`` — freeze the plugins
  (:mod:`credprov.bundle.freeze`: one multicall runtime, :mod:`credprov.bundle._multicall`,
  at the glibc 2.17 floor) and pack
  ``credprov-plugins-<version>-linux-<arch>.tar.gz`` with its POSIX-sh ``install``;
* :mod:`credprov.bundle.tarball`: a bundle tarball read as untrusted input, checked whole
  (complete, bounded, only ``credprov-plugins/``) before it is unpacked or imaged;
* :mod:`credprov.bundle.oci`: the installer image, an OCI image archive written directly
  (no buildah): static busybox, the bundle and ``image-entrypoint``; one bundle per
  architecture gives one multi-architecture image.

This package's ``__init__`` imports nothing: the frozen runtime imports
:mod:`credprov.bundle._multicall` on every plugin start.
"""
