"""The semantic tier: embeddings, a FAISS index durable in Postgres, the guard.

Imports nothing heavy; `setup` loads torch and faiss when the tier is enabled.
"""
