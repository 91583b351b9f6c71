"""Problems, tests, reference durations and execution records: formats, loaders and the builder."""
