"""The container runtime as the kubelet meets it: the CRI ``ImageService`` client
(``runtime.v1`` over gRPC) the kubelet's image path drives
(:class:`credprov.cri.client.CRIRuntime`; a ``cri`` extra, left out of the plugin bundle), and
the runtimes' registry mirror configuration (:mod:`credprov.cri.mirrors`: standard library,
in the bundle's doctor)."""
