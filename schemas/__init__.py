"""Pydantic v2 data contracts shared by workflows, activities, inference and clients."""
