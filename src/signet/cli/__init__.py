"""The ``signet`` command line: one module per noun group."""
