"""A reference reader of the harness's frames (`harness.encode_frame`), written from the format:
the tests decode what the harness and the supervisor write with it, and play the harness end
of a channel with it."""

from __future__ import annotations

import json

from sandbox_cluster import harness


def read_frame(fd: int) -> tuple[dict, list[bytes]]:
    """One frame from `fd`: a 4-byte big-endian header length, the JSON header, then the
    payloads whose sizes the header lists under "payload_sizes"."""
    (size,) = harness.FRAME_HEADER.unpack(harness.read_exact(fd, harness.FRAME_HEADER.size))
    if size > harness.MAX_HEADER_BYTES:
        raise ValueError(f"frame header of {size} bytes exceeds {harness.MAX_HEADER_BYTES}")
    header = json.loads(harness.read_exact(fd, size))
    return header, [harness.read_exact(fd, n) for n in header.get("payload_sizes", [])]
