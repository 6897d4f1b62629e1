"""The local stack behind `agentkeel up` / `down` / `demo`: supervisor, services, stand-ins."""
