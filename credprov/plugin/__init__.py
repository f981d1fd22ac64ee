"""The stable import path ``credprov.plugin.registry`` (moved to
:mod:`credprov.credentialprovider.plugin`)."""
