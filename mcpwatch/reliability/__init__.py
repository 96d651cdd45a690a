"""The reliability core: pure logic with an injectable clock, no I/O, no Textual, no transport.

deadline (the tools/call budget), tombstones (late-response filtering), ids (the upstream id space and connection
generations), backoff (reconnect delays), statesync (cache-control hints and invalidation signals).
"""
