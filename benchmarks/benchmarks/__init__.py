"""airspeed velocity benchmarks of glfs (benchmarks/README.md): imports glfs and its peers only."""
