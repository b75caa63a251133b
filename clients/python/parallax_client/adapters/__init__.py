"""Adapters for common tool SDKs. Each module imports only the standard
library; the SDK itself is the user's (install the extra: ``slack``, ``http``)."""
