"""Schemathesis hooks for tests/api_fuzz.rs: the check that every error
Parallax answers is its JSON error shape, {"error": {"code", "message"}}.

Loaded with SCHEMATHESIS_HOOKS=hooks (this folder on PYTHONPATH); run as
`--checks not_a_server_error,error_is_json`.
"""

import json

import schemathesis


@schemathesis.check
def error_is_json(ctx, response, case):
    """A 4xx or 5xx is application/json with a string code and message."""
    if response.status_code < 400:
        return None
    # A HEAD answer has no body, by HTTP.
    if case.method.upper() == "HEAD":
        return None
    kind = response.headers.get("content-type", [""])
    kind = kind[0] if isinstance(kind, list) else kind
    if not kind.lower().startswith("application/json"):
        raise AssertionError(
            f"{response.status_code} with Content-Type {kind!r}, not application/json"
        )
    try:
        body = json.loads(response.content)
    except ValueError as e:
        raise AssertionError(f"{response.status_code} whose body is not JSON: {e}") from e
    error = body.get("error") if isinstance(body, dict) else None
    if not (
        isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    ):
        raise AssertionError(
            f"{response.status_code} whose body is not {{\"error\": {{\"code\", \"message\"}}}}: "
            f"{response.content[:200]!r}"
        )
    return None
