"""Database setup: SQL migrations and the deterministic demo data."""
