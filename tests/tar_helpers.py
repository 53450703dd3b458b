"""Hand-made tar archives as model-table rows, for the archive tests."""

from __future__ import annotations

import io
import tarfile

from mlsql_ray.storage.streaming_tar import CHUNK_SIZE


def rows_of_stream(stream: bytes) -> list[dict]:
    """Archive bytes cut into rows the way build_rows_from_file cuts them."""
    return [{"start": i, "offset": len(stream[i:i + CHUNK_SIZE]), "value": stream[i:i + CHUNK_SIZE]}
            for i in range(0, len(stream), CHUNK_SIZE)]


def rows_of(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> list[dict]:
    """An archive of exactly these members (data None: no content), as rows."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return rows_of_stream(buffer.getvalue())
