"""Go emulation, private to credprov: ``net/url`` parsing, ``fmt``/``strconv`` quoting,
``time.Duration``, ``encoding/json`` and ``sigs.k8s.io/yaml`` decoding quirks and
apimachinery's strict decoding, ``field.ErrorList`` aggregation and ``singleflight``.
Nothing outside ``credprov`` imports it (durations are public as
:mod:`credprov._go.durations`); the plugin SDK never does."""
