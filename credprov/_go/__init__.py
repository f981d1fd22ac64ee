"""Go emulation, private to credprov: ``net/url`` parsing, ``fmt``/``strconv`` quoting,
``time.Duration``, ``encoding/json`` and ``sigs.k8s.io/yaml`` decoding quirks and
apimachinery's strict decoding, ``field.ErrorList`` aggregation and ``singleflight``.
Nothing outside ``credprov`` imports it: plugins get what they need (durations,
``go_quote``, ``use_go``) from :mod:`credprov.sdk`, which may import it (it imports only
the standard library)."""
