"""The plugin-side persistent response cache: the warm path of every credprov plugin.

The kubelet forgets its cache when it restarts and asks again on every miss; a cloud plugin
would call its cloud each time. A plugin that opts in keeps its answers here, keyed like the
kubelet's cache (Image, then Registry, then Global) plus the service-account identity and
the plugin's own arguments, and answers from a still-valid entry without importing anything
heavy.

Safety rules: one file per key, 0600, in a 0700 directory owned by the running user (a
directory with other owners or modes is not used), written atomically (temp file, fsync,
rename), opened with ``O_NOFOLLOW`` (symlinks refused), and every unreadable, corrupt,
foreign or expired entry counts as absent. Standard library only.
"""

from __future__ import annotations

import os
import stat
import time

from credprov.base import fastjson
from credprov.errors import PluginSDKError

# typing costs ~10 ms of start-up (re, enum, contextlib) on a plugin's warm path; the
# annotations need it only for type checkers (mypy reads this name as typing's).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:  # the interpreter's own SHA-256: hashlib would load OpenSSL (~4 ms) on the warm path
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - other versions
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        from hashlib import sha256

#: The cache format; entries of another version are ignored.
FORMAT = 1

#: Entries closer than this to their expiry are not served: the kubelet would cache them
#: for less than a second.
MIN_REMAINING_SECONDS = 1.0

MAX_ENTRY_BYTES = 1024 * 1024


class CacheUnavailable(PluginSDKError):
    """The cache directory is unsafe or cannot be created; the plugin runs uncached."""


def default_cache_dir(plugin_name: str) -> str:
    """``$CREDPROV_PLUGIN_CACHE_DIR/<name>``, else ``/run/credprov/plugins/<name>`` for root
    (tmpfs: survives kubelet restarts, not reboots), else the user's runtime or cache dir."""
    base = os.environ.get("CREDPROV_PLUGIN_CACHE_DIR")
    if not base:
        if os.geteuid() == 0:
            base = "/run/credprov/plugins"
        else:
            runtime = os.environ.get("XDG_RUNTIME_DIR")
            base = (
                os.path.join(runtime, "credprov", "plugins")
                if runtime
                else os.path.join(os.path.expanduser("~"), ".cache", "credprov", "plugins")
            )
    return os.path.join(base, plugin_name)


def _jwt_claims(token: str) -> dict[str, Any] | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    import base64  # only for service-account tokens

    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = fastjson.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, TypeError):
        return None
    return claims if isinstance(claims, dict) else None


def service_account_identity(
    token: str, annotations: dict[str, str], cache_type: str = "ServiceAccount"
) -> str:
    """The part of a cache key that stands for the pod's service account (KEP-4412).

    ``ServiceAccount``: the namespace, name and UID claims of the token (the kubelet's
    ``cacheType: ServiceAccount``), so every pod of that account shares the entry; a token
    whose claims cannot be read falls back to ``Token``. ``Token``: the token's hash. The
    annotations the kubelet passed are part of the identity either way.
    """
    if not token:
        return ""
    ident = ""
    if cache_type == "ServiceAccount":
        claims = _jwt_claims(token)
        k8s = claims.get("kubernetes.io") if claims else None
        if isinstance(k8s, dict):
            sa = k8s.get("serviceaccount") or {}
            ns = k8s.get("namespace")
            if isinstance(sa, dict) and ns and sa.get("name") and sa.get("uid"):
                ident = fastjson.dumps(["sa", ns, sa["name"], sa["uid"]])
    if not ident:
        ident = fastjson.dumps(["token", sha256(token.encode("utf-8")).hexdigest()])
    return ident + fastjson.dumps(sorted(annotations.items()))


class ResponseCache:
    """Files of cached answers in one directory (see the module docstring for the rules)."""

    def __init__(self, directory: str, scope: str = "", clock: Any = time.time) -> None:
        self.directory = directory
        self.scope = scope  # what else distinguishes answers: the plugin's args
        self.clock = clock
        self._checked = False

    # -- directory ----------------------------------------------------------------------------

    def _ensure_dir(self) -> None:
        if self._checked:
            return
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            st = os.lstat(self.directory)
        except OSError as exc:
            raise CacheUnavailable(f"cannot create cache directory: {exc.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise CacheUnavailable(f"{self.directory} is not a directory (a symlink?)")
        if st.st_uid != os.geteuid():
            raise CacheUnavailable(f"{self.directory} is owned by uid {st.st_uid}, not us")
        if st.st_mode & 0o077:
            raise CacheUnavailable(
                f"{self.directory} has mode {stat.S_IMODE(st.st_mode):04o}; want 0700"
            )
        self._checked = True

    def _path(self, key: str) -> str:
        name = sha256((self.scope + "\x00" + key).encode("utf-8")).hexdigest()
        return os.path.join(self.directory, name)

    # -- entries ------------------------------------------------------------------------------

    @staticmethod
    def keys_for(image: str, identity: str) -> list[tuple[str, str]]:
        """(cacheKeyType, key) to look up for ``image``, in the kubelet's order."""
        registry = image.split("/")[0]
        return [
            ("Image", fastjson.dumps(["Image", image, identity])),
            ("Registry", fastjson.dumps(["Registry", registry, identity])),
            ("Global", fastjson.dumps(["Global", "", identity])),
        ]

    @staticmethod
    def key_for(cache_key_type: str, image: str, identity: str) -> str:
        """The entry key of an answer: its cacheKeyType, what that type keys on (the image,
        its registry, or nothing) and the service-account identity, as one JSON string."""
        base = {"Image": image, "Registry": image.split("/")[0], "Global": ""}[cache_key_type]
        return fastjson.dumps([cache_key_type, base, identity])

    def get(self, image: str, identity: str) -> dict[str, Any] | None:
        """The freshest valid entry for ``image``, with ``remaining`` seconds, or None."""
        try:
            self._ensure_dir()
        except CacheUnavailable:
            return None
        now = self.clock()
        for key_type, key in self.keys_for(image, identity):
            entry = self._read(self._path(key))
            if entry is None or entry.get("key") != key or entry.get("scope") != self.scope:
                continue
            if entry.get("cacheKeyType") != key_type:
                continue
            expires = entry.get("expiresAt")
            if not isinstance(expires, int | float):
                continue
            remaining = expires - now
            if remaining < MIN_REMAINING_SECONDS:
                continue
            entry["remaining"] = remaining
            return entry
        return None

    def _read(self, path: str) -> dict[str, Any] | None:
        try:
            # O_NONBLOCK: a FIFO planted in the cache dir must not hang the plugin.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (
                not stat.S_ISREG(st.st_mode)
                or st.st_uid != os.geteuid()
                or st.st_mode & 0o077
                or st.st_size > MAX_ENTRY_BYTES
            ):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(MAX_ENTRY_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            entry = fastjson.loads(data)
        except ValueError:
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        auth = entry.get("auth")
        if not isinstance(auth, dict) or not all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v)
            for v in auth.values()
        ):
            return None
        return entry

    def put(
        self,
        cache_key_type: str,
        image: str,
        identity: str,
        auth: dict[str, tuple[str, str]],
        ttl_seconds: float,
        *,
        credentials_expire_at: float | None = None,
    ) -> bool:
        """Store an answer for ``ttl_seconds``; False when the cache is unusable.
        ``credentials_expire_at`` (the credentials' own expiry, when the handler knew it)
        is kept for telemetry."""
        if ttl_seconds < MIN_REMAINING_SECONDS:
            return False
        try:
            self._ensure_dir()
        except CacheUnavailable:
            return False
        key = self.key_for(cache_key_type, image, identity)
        entry = {
            "format": FORMAT,
            "scope": self.scope,
            "key": key,
            "cacheKeyType": cache_key_type,
            "expiresAt": self.clock() + ttl_seconds,
            "auth": {k: [u, p] for k, (u, p) in auth.items()},
        }
        if credentials_expire_at is not None:
            entry["credentialsExpireAt"] = credentials_expire_at
        data = fastjson.dumps(entry, separators=(",", ":")).encode("utf-8")
        path = self._path(key)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError:
            # Not contextlib.suppress: this module is on the warm path, keep imports minimal.
            try:  # noqa: SIM105
                os.unlink(tmp)
            except OSError:
                pass
            return False
        return True

    def clear(self) -> int:
        """Remove every entry (``--clear-cache``); returns how many."""
        try:
            self._ensure_dir()
            names = os.listdir(self.directory)
        except (CacheUnavailable, OSError):
            return 0
        removed = 0
        for name in names:
            try:
                os.unlink(os.path.join(self.directory, name))
                removed += 1
            except OSError:
                pass
        return removed
