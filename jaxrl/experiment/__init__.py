"""Host-side experiment machinery: configs and presets, logging, the chunked driver."""
