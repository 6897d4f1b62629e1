"""Benchmarks of agentkeel. Run `python -m bench.dag` for the DAG scheduler benchmark."""
