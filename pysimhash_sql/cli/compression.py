"""Compressed files, read as what they hold: gzip (.gz), bzip2 (.bz2), xz (.xz)
and Zstandard (.zst), known by their first bytes (their magic numbers), not by
their names.  Zstandard is Python 3.14's compression.zstd, else the zstandard
package (a dependency below 3.14).

A file whose data is not what its first bytes promise is CorruptData; so is
one holding more than MAX_DECOMPRESSED bytes (a decompression bomb), which the
text of one document is not.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib
from pathlib import Path
from typing import BinaryIO

MAX_DECOMPRESSED = 256 * 2**20
CHUNK = 2**20


class CorruptData(Exception):
    """Compressed data that cannot be decompressed: why."""


def zstd_decompressor():
    """Python 3.14's streaming decompressor (as lzma's), else None: the zstandard package's reader."""
    try:
        from compression import zstd  # Python 3.14
    except ImportError:
        return None
    return zstd.ZstdDecompressor()


# magic number -> (format's name, a new streaming decompressor)
FORMATS = {
    b"\x1f\x8b": ("gzip", lambda: zlib.decompressobj(31)),
    b"BZh": ("bzip2", bz2.BZ2Decompressor),
    b"\xfd7zXZ\x00": ("xz", lzma.LZMADecompressor),
    b"\x28\xb5\x2f\xfd": ("zstd", zstd_decompressor),
}


def compression_of(data: bytes) -> str | None:
    """The compression format data starts like, if any."""
    return next((name for magic, (name, _) in FORMATS.items() if data.startswith(magic)), None)


def decompress(data: bytes, limit: int = MAX_DECOMPRESSED) -> bytes:
    """data decompressed if it is compressed (concatenated members or frames
    too), else as it is; CorruptData if it cannot be, or is more than limit bytes."""
    found = next((entry for magic, entry in FORMATS.items() if data.startswith(magic)), None)
    if found is None:
        return data
    name, new = found
    try:
        out = members(new, data, limit) if new() is not None else zstandard_read(data, limit)
    except CorruptData as e:
        raise CorruptData(f"{e} {name} data") from None
    except Exception as e:  # zlib.error, OSError, EOFError, LZMAError, ZstdError: all say "corrupt"
        raise CorruptData(f"corrupt {name} data ({e})") from None
    if len(out) > limit:
        raise CorruptData(f"more than {limit // 2**20} MiB of text decompressed from {name} data")
    return out


def members(new, data: bytes, limit: int) -> bytes:
    """Each member (gzip, bzip2) or frame (zstd) in turn, CHUNK bytes of output at a
    time, stopping past limit; trailing zero bytes (padding) end the data."""
    out = bytearray()
    while data.strip(b"\x00"):
        decompressor = new()
        pending = data
        while not decompressor.eof:
            chunk = decompressor.decompress(pending, CHUNK)
            out += chunk
            if len(out) > limit:
                return bytes(out)
            pending = getattr(decompressor, "unconsumed_tail", b"")  # zlib keeps the rest with the caller
            if not chunk and not pending and getattr(decompressor, "needs_input", True):
                raise CorruptData("truncated")
        data = decompressor.unused_data
    return bytes(out)


def zstandard_read(data: bytes, limit: int) -> bytes:
    import io

    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        out = reader.read(limit + 1)  # bounded: a bomb stops here
    if len(out) <= limit:
        check = zstandard.ZstdDecompressor().decompressobj()
        check.decompress(data)
        if not check.eof:  # the reader returns a truncated frame's start without a word
            raise CorruptData("truncated")
    return out


def read_bytes(path: Path) -> bytes:
    """A file's bytes, decompressed if it is compressed."""
    return decompress(path.read_bytes())


# -- streams: a corpus's JSON Lines, read and written a line at a time (dedupe) -------

SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd"}


def compression_of_file(path: Path) -> str | None:
    """The compression a file's first bytes say it has, if any."""
    with open(path, "rb") as stream:
        return compression_of(stream.read(8))


def compression_of_name(name: str) -> str | None:
    """The compression a file name's suffix names, if any."""
    return SUFFIXES.get(Path(name).suffix.lower())


def open_stream(path: Path) -> BinaryIO:
    """A file's bytes as a stream, decompressed as they are read if it is
    compressed (whatever its size: no MAX_DECOMPRESSED here)."""
    name = compression_of_file(path)
    if name is None:
        return open(path, "rb")
    if name == "zstd":
        try:
            from compression import zstd  # Python 3.14
            return zstd.open(path, "rb")
        except ImportError:
            import io

            import zstandard
            raw = open(path, "rb")
            return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True,
                                                                                 closefd=True))
    return {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}[name](path, "rb")


def compressing(raw: BinaryIO, name: str | None) -> BinaryIO:
    """A stream writing into raw, compressed by ``name`` (None: as it is);
    closing it finishes the compressed data and leaves raw open.  gzip's
    header carries no time nor name: the same data compresses to the same bytes."""
    if name is None:
        return _Unclosed(raw)
    if name == "gzip":
        return gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
    if name == "bzip2":
        return bz2.BZ2File(raw, "wb")
    if name == "xz":
        return lzma.LZMAFile(raw, "wb")
    try:
        from compression import zstd  # Python 3.14
        return zstd.ZstdFile(raw, "wb")
    except ImportError:
        import zstandard
        return zstandard.ZstdCompressor().stream_writer(raw, closefd=False)


class _Unclosed:
    """raw, its close() left to its owner."""

    def __init__(self, raw: BinaryIO) -> None:
        self.write = raw.write

    def close(self) -> None:
        pass
