"""The kubelet's image path as a library (``pkg/kubelet/images`` and what wires it).

* :mod:`credprov.kubelet.podspec`: a pod as the API server stores it, defaulted and
  checked, and its pull secrets (``getPullSecretsForPod``);
* :mod:`credprov.kubelet.aspod`: a pod of a cluster's objects, seen through the API server
  as its node (Node authorizer, NodeRestriction, KEP-4412 tokens);
* :mod:`credprov.kubelet.node`: one kubelet's pieces wired together: the pull manager, the
  image manager (``EnsureImageExists``) and the credential chain, over a CRI runtime;
* :mod:`credprov.kubelet.scenario` and :mod:`credprov.kubelet.simulation`: the simulator's
  scenario model and the engine that replays it against a fake registry and runtime.

Every error here derives from :class:`KubeletError` (itself a
:class:`credprov.errors.CredprovError`), one line each.
"""

from __future__ import annotations

from credprov.errors import CredprovError


class KubeletError(CredprovError):
    """A node, pod or scenario that cannot be set up as asked; ``str()`` is one line."""
