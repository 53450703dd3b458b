"""Object storage (``s3://``, ``gs://``, ``az://``/``abfss://``) wherever a path goes.

A path that is a URI becomes an :class:`ObjectPath`: the URI together with the options that
open it (credentials, endpoint), so whoever holds one — the driver, or a worker on another
host — can read what it names without anything local to the driver. deltalake opens it with
``storage_options()``, pyarrow with ``filesystem()``; DuckDB never opens a URI itself (its
httpfs extension would download at run time), it scans pyarrow datasets of them.

Options come from the standard AWS environment (``AWS_ACCESS_KEY_ID`` …) overridden by Byzer's
Hadoop settings (``set fs.s3a.access.key="…" where type="conf";``). The path's ``repr`` and
``str`` never show them.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pyarrow import fs

from .errors import MLSQLError
from .options import flag

_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>.*)$")
# s3a/s3n are Hadoop's names for S3: the same bucket and key
SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "az": "az", "abfs": "abfs",
           "abfss": "abfss", "adl": "adl"}

# the standard AWS environment variables deltalake and pyarrow both understand
AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL",
           "AWS_ALLOW_HTTP")
# Byzer's (Hadoop's) S3A settings -> deltalake's storage option keys
HADOOP_S3A = {"fs.s3a.access.key": "AWS_ACCESS_KEY_ID", "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
              "fs.s3a.session.token": "AWS_SESSION_TOKEN", "fs.s3a.endpoint": "AWS_ENDPOINT_URL",
              "fs.s3a.endpoint.region": "AWS_REGION", "fs.s3a.region": "AWS_REGION"}


def is_uri(path: object) -> bool:
    """Whether ``path`` names an object store (``s3://bucket/key`` …), not a local file."""
    if isinstance(path, ObjectPath):
        return True
    match = _URI.match(str(path)) if isinstance(path, str) else None
    return bool(match) and match["scheme"].lower() in SCHEMES


def storage_options(conf: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
                    bucket: str | None = None) -> dict[str, str]:
    """deltalake's ``storage_options`` for the environment's AWS variables and the session's
    ``fs.s3a.*`` settings (which win; Hadoop's per-bucket ``fs.s3a.bucket.BUCKET.access.key``
    and the like win for that ``bucket``). Only what is set; the rest is each client's default."""
    env = os.environ if environ is None else environ
    options = {key: env[key] for key in AWS_ENV if env.get(key)}
    if "AWS_REGION" not in options and env.get("AWS_DEFAULT_REGION"):
        options["AWS_REGION"] = env["AWS_DEFAULT_REGION"]
    conf = dict(conf or {})
    if bucket:
        own = f"fs.s3a.bucket.{bucket}."
        conf.update({f"fs.s3a.{key[len(own):]}": value for key, value in list(conf.items()) if key.startswith(own)})
    for key, option in HADOOP_S3A.items():
        if conf.get(key):
            options[option] = conf[key]
    endpoint = options.get("AWS_ENDPOINT_URL")
    if endpoint and "://" not in endpoint:  # Hadoop's endpoint is often a bare host[:port]
        ssl = flag(conf, "fs.s3a.connection.ssl.enabled", True)
        options["AWS_ENDPOINT_URL"] = endpoint = ("https://" if ssl else "http://") + endpoint
    if endpoint and endpoint.startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    path_style = conf.get("fs.s3a.path.style.access")
    if path_style is not None:
        options["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false" if flag(conf, "fs.s3a.path.style.access", False) else "true"
    return options


@dataclass(frozen=True)
class ObjectPath:
    """A file or folder on an object store: ``uri`` (``scheme://bucket/key``, no trailing
    slash) and the options that open it. Offers the part of ``pathlib.Path`` the storage code
    uses (``/``, ``joinpath``, ``name``, ``parent``), so table names and folders join alike."""

    uri: str
    options: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, options: Mapping[str, str] | None = None) -> ObjectPath:
        match = _URI.match(text)
        if not match or match["scheme"].lower() not in SCHEMES:
            raise MLSQLError(f"not an object store URI: {text!r} (expected e.g. s3://bucket/folder)")
        rest = match["rest"].strip("/")
        if not rest:
            raise MLSQLError(f"{text!r} names no bucket (expected e.g. s3://bucket/folder)")
        return cls(f"{SCHEMES[match['scheme'].lower()]}://{rest}", tuple(sorted((options or {}).items())))

    def __str__(self) -> str:
        return self.uri

    def __fspath__(self) -> str:  # refused: an object is no local file
        raise TypeError(f"{self.uri} is on an object store, not a local path")

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0]

    @property
    def key(self) -> str:
        """``bucket/key`` without the scheme: the path pyarrow's filesystems take."""
        return self.uri.split("://", 1)[1]

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectPath:
        head = self.key.rsplit("/", 1)[0] if "/" in self.key else self.key
        return ObjectPath(f"{self.scheme}://{head}", self.options)

    def joinpath(self, *parts: str) -> ObjectPath:
        tail = "/".join(str(p).strip("/") for p in parts if str(p).strip("/"))
        return ObjectPath(f"{self.uri}/{tail}" if tail else self.uri, self.options)

    def __truediv__(self, part: str) -> ObjectPath:
        return self.joinpath(part)

    def relative_to(self, other: ObjectPath) -> str:
        if self.uri != other.uri and not self.uri.startswith(other.uri + "/"):
            raise ValueError(f"{self.uri} is not below {other.uri}")
        return self.uri[len(other.uri) + 1:]

    def storage_options(self) -> dict[str, str]:
        """deltalake's options for this path."""
        return dict(self.options)

    def daft_io_config(self):
        """Daft's ``IOConfig`` for this ``s3://`` path: the options deltalake and pyarrow open it with."""
        return _daft_io_config(self.options)

    def filesystem(self):
        """A pyarrow filesystem for this path's store (paths on it are ``key``)."""
        if self.scheme != "s3":
            filesystem, _ = fs.FileSystem.from_uri(self.uri)  # GCS/Azure: their own environment variables
            return filesystem
        return _s3_filesystem(self.options)

    # -- what the storage code asks of a path -------------------------------------------------

    def _info(self):
        return self.filesystem().get_file_info(self.key)

    def exists(self) -> bool:
        return self._info().type != fs.FileType.NotFound

    def is_dir(self) -> bool:
        return self._info().type == fs.FileType.Directory

    def is_file(self) -> bool:
        return self._info().type == fs.FileType.File

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Folders on an object store are prefixes: they exist once something is below them."""


def resolve(text: str, conf: Mapping[str, str] | None = None) -> ObjectPath:
    """``text`` (an object store URI) with the options of the environment and ``conf``."""
    return with_conf(ObjectPath.parse(text), conf)


def with_conf(path, conf: Mapping[str, str] | None):
    """``path`` again with the options of the environment and ``conf`` (an ObjectPath only;
    a local path is returned as it is)."""
    if not isinstance(path, ObjectPath):
        return path
    options = storage_options(conf, bucket=path.key.split("/", 1)[0])
    return ObjectPath(path.uri, tuple(sorted(options.items())))


def delta_options(path) -> dict[str, str] | None:
    """deltalake's ``storage_options`` for ``path``: None for a local folder."""
    return path.storage_options() if isinstance(path, ObjectPath) else None


@functools.lru_cache(maxsize=32)
def _s3_filesystem(options: tuple[tuple[str, str], ...]):
    """One pyarrow S3 filesystem per set of options: making one costs tens of milliseconds (its
    client and credential chain), and every ``exists``/``is_dir``/listing asks for one."""
    options = dict(options)
    kwargs: dict = {}
    if options.get("AWS_ACCESS_KEY_ID"):
        kwargs.update(access_key=options["AWS_ACCESS_KEY_ID"], secret_key=options.get("AWS_SECRET_ACCESS_KEY"),
                      session_token=options.get("AWS_SESSION_TOKEN"))
    if options.get("AWS_REGION"):
        kwargs["region"] = options["AWS_REGION"]
    if options.get("AWS_ENDPOINT_URL"):
        endpoint = urlsplit(options["AWS_ENDPOINT_URL"])
        kwargs.update(endpoint_override=endpoint.netloc + endpoint.path.rstrip("/"), scheme=endpoint.scheme or "https")
    if options.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST") == "true":
        kwargs["force_virtual_addressing"] = True
    return fs.S3FileSystem(**kwargs)


def _daft_io_config(options: tuple[tuple[str, str], ...]):
    """Daft's S3 settings for a set of options, each as ``_s3_filesystem`` reads it (Daft hands
    them on to deltalake's commits as ``storage_options``: the same endpoint, keys and HTTP)."""
    from daft.io import IOConfig, S3Config  # heavy: Daft, only for sessions whose sql_engine is daft

    options = dict(options)
    kwargs: dict = {"region_name": options.get("AWS_REGION"), "endpoint_url": options.get("AWS_ENDPOINT_URL"),
                    "key_id": options.get("AWS_ACCESS_KEY_ID"), "access_key": options.get("AWS_SECRET_ACCESS_KEY"),
                    "session_token": options.get("AWS_SESSION_TOKEN")}
    kwargs = {key: value for key, value in kwargs.items() if value}
    if flag(options, "AWS_ALLOW_HTTP", False):
        kwargs["use_ssl"] = False
    if options.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST") == "true":
        kwargs["force_virtual_addressing"] = True
    return IOConfig(s3=S3Config(**kwargs))
