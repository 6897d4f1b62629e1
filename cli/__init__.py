"""The `agentkeel` command line and the local stack it starts (`agentkeel up`, `demo`)."""
