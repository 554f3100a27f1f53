"""Schemathesis hooks of the contract tests (test/integration/contract-fuzz.test.ts and `npm run fuzz:deep`).

A sandbox company of up to 250,000 leases, or a batch of up to 100,000 sandbox changes, is valid and the fuzzer is
right to ask for one; but once the stateful phase finds real organization ids it creates dozens of them, and
generating and syncing those takes many minutes on a two-core machine. Sizes and counts above SMALL are lowered to
SMALL just before the request is sent. The lowered value is still valid, so every check still applies to the
request as sent; the bounds themselves are covered by the examples and coverage phases, which use ids that do not
exist. Likewise a held Operation poll (`Prefer: wait=N`) is shortened to SHORT_WAIT seconds, within the request
time-out.
"""
import re

import schemathesis

SMALL = 200


def _lower(value):
    # A JSON integer may be written 250000.0 (JSON Schema counts it an integer, and the fuzzer writes it so).
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > SMALL:
        return SMALL
    if isinstance(value, dict):
        return {k: _lower(v) for k, v in value.items()}
    return value


# `Prefer: wait=N` holds an Operation poll up to N seconds (at most 20), longer than a request may take here (10 s).
WAIT = re.compile(r"(wait\s*=\s*\"?)(\d+)", re.IGNORECASE)
SHORT_WAIT = 2


def _shorten_wait(headers):
    for name in list(headers or {}):
        if name.lower() == "prefer" and isinstance(headers[name], str):
            headers[name] = WAIT.sub(lambda m: m.group(1) + str(min(int(m.group(2)), SHORT_WAIT)), headers[name])


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.method.upper() == "GET" and case.operation.path == "/v1/operations/{id}":
        _shorten_wait(case.headers)
        _shorten_wait(kwargs.get("headers"))
        return
    body = case.body
    if case.operation.method.upper() != "POST" or not isinstance(body, dict):
        return
    path = case.operation.path
    if path == "/organizations/{id}/integrations" and isinstance(body.get("source"), dict) and "size" in body["source"]:
        body["source"]["size"] = _lower(body["source"]["size"])
    elif path == "/integrations/{id}/sandbox/changes":
        for field in ("create", "update", "delete", "lease_transitions", "corrupt"):
            if field in body:
                body[field] = _lower(body[field])
