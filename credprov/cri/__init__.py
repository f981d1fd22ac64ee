"""The CRI ``ImageService`` client (``runtime.v1`` over gRPC) the kubelet's image path
drives: :class:`credprov.cri.client.CRIRuntime`."""
