"""The demo shop's tool activities and their SQL."""
