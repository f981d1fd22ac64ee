"""The stable import path ``credprov.runtime.cri`` (moved to :mod:`credprov.cri.client`)."""
