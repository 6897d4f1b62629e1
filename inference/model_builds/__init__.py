"""Scripts that prepare model directories for the engines (run once, results cached)."""
