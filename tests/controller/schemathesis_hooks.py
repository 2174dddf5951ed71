"""Schemathesis hooks for test_openapi_conformance.py (loaded through SCHEMATHESIS_HOOKS): the
dataset upload's application/x-tar body is sent as raw bytes, like application/octet-stream."""
import schemathesis

schemathesis.serializer.alias("application/x-tar", "application/octet-stream")
