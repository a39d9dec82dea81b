module statemine.lab/quicgo

go 1.26

require github.com/quic-go/quic-go v0.0.0-00010101000000-000000000000

// The builder (statemine/lab/runners/quicgo.py) copies this module to a temporary
// directory and points the replace directive at a fetched, patched quic-go tree.
replace github.com/quic-go/quic-go => ./quic-go-placeholder
