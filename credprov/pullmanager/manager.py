"""The image pull manager: decides whether a pod may use an image already on the node.

Mirrors the kubelet's ``PullManager`` (``pkg/kubelet/images/pullmanager/image_pull_manager.go``
and ``locks.go``, 1.35/1.36 behaviour, with the 1.37 ``StripedLockSet`` stripe fix):

* pull intents are written before a pull and ref-counted in memory, so concurrent pulls of one
  image string share one intent file (``RecordPullIntent``/``decrementImagePullIntent``);
* a successful pull merges the credentials that worked into the ``ImagePulledRecord`` of the
  image's CRI imageRef (``writePulledRecordIfChanged``/``pulledRecordMergeNewCreds``: node-wide
  access is terminal, secrets merge by coordinates with the new hash replacing the old one,
  service accounts are a sorted set, the record is written and its ``lastUpdatedTime`` bumped
  only when something changed, an unreadable record is overwritten);
* :meth:`ImagePullManager.must_attempt_image_pull` is ``MustAttemptImagePull`` step by step:
  fail safe on every read error, ask the verification policy, look the pod's credentials up
  lazily and only when a record could match, learn new secret coordinates and rotated hashes
  while matching (capped at 100 cached secrets, ``writeRecordWhileMatchingLimit``);
* :meth:`ImagePullManager.prune_unknown_records` is ``PruneUnknownRecords`` and
  :meth:`ImagePullManager.initialize` the start-up housekeeping that turns intents of images the
  runtime has into credential-less records.

Beyond upstream:

* Several processes may share one kubelet root (the CLI next to a daemon): when the accessor
  (or a layer it wraps) offers ``locked(kind, key)`` (the file store's ``flock``), every
  read-modify-write of a record re-reads that layer under it, and every intent write/delete
  runs under it, so no process loses another's record update. The in-memory intent counters
  stay per process, as in the kubelet: one process finishing a pull deletes the intent file
  while another may still be pulling the same image string.
* ``record_max_age`` (off by default = kubelet behaviour): a credential entry of a record whose
  ``lastUpdatedTime`` is older than this no longer satisfies verification. The file format has
  one time per record, so to keep "every entry was verified at or after lastUpdatedTime" true,
  merges into a live record keep its time (a late entry expires early, which only costs a pull)
  and a successful pull against an expired record rebuilds it from just the credentials that
  pulled, with the current time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from credprov.base.clock import Clock, RealClock, utc_now
from credprov.pullmanager.interfaces import (
    ImageService,
    PullRecordsAccessor,
    StoreReadError,
    StoreWriteError,
)
from credprov.pullmanager.locks import MAX_LOCK_STRIPES, StripedLockSet
from credprov.pullmanager.metrics import (
    CHECK_RESULT_CREDENTIAL_POLICY_ALLOWED,
    CHECK_RESULT_CREDENTIAL_RECORD_FOUND,
    CHECK_RESULT_ERROR,
    CHECK_RESULT_MUST_AUTHENTICATE,
)
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullSecret,
    ImagePullServiceAccount,
)

log = logging.getLogger("credprov.pullmanager")

#: Stop writing credentials learnt while matching once an entry caches this many secrets, so
#: namespace churn cannot grow a record without bound (``writeRecordWhileMatchingLimit``).
WRITE_RECORD_WHILE_MATCHING_LIMIT = 100


# ``kubelet_imagemanager_image_mustpull_checks_total`` results, under the manager's names.
RESULT_POLICY_ALLOWED = CHECK_RESULT_CREDENTIAL_POLICY_ALLOWED
RESULT_RECORD_FOUND = CHECK_RESULT_CREDENTIAL_RECORD_FOUND
RESULT_MUST_AUTHENTICATE = CHECK_RESULT_MUST_AUTHENTICATE
RESULT_ERROR = CHECK_RESULT_ERROR

# The ``kind`` argument of the accessor's cross-process ``locked(kind, key)``.
LOCK_KIND_INTENT = "intent"
LOCK_KIND_RECORD = "record"

#: ``GetPodCredentials``: the pod's pull secrets (with hashes) and its service account, if a
#: credential provider plugin tied one to the image. Called at most once, and only when needed.
GetPodCredentials = Callable[[], tuple[list[ImagePullSecret], ImagePullServiceAccount | None]]


class PullIntentError(StoreWriteError):
    """The intent could not be written; the kubelet aborts the pull on it."""


class VerificationPolicy(Protocol):
    """``ImagePullPolicyEnforcer``: whether an image present on the node must be verified."""

    def require_credential_verification(self, image: str, image_pulled_by_kubelet: bool) -> bool:
        """True when the pod must prove it may pull ``image``."""
        ...


class PullManagerMetricsSink(Protocol):
    """What the manager reports (``credprov.pullmanager.metrics.PullManagerMetrics``)."""

    def must_pull_check(self, result: str) -> None:
        """Count one ``MustAttemptImagePull`` decision by its ``result`` label."""

    def set_ondisk(self, intents: int, records: int) -> None:
        """Set how many intent and record files the store holds."""

    def set_inmemory(self, intents: int, records: int) -> None:
        """Set how full the in-memory caches of intents and records are, in percent."""


# -- merging ------------------------------------------------------------------------------------


def _coords_key(c: ImagePullSecret | ImagePullServiceAccount) -> tuple[str, str, str]:
    return (c.namespace, c.name, c.uid)


def merge_pull_secrets(
    orig: list[ImagePullSecret], new: Iterable[ImagePullSecret]
) -> tuple[list[ImagePullSecret], bool]:
    """Union by (uid, namespace, name); a new hash replaces the cached one (rotation).

    Returns ``orig`` untouched when nothing changed, else the union sorted by namespace, name,
    uid (``mergePullSecrets``).
    """
    by_coords = {(s.uid, s.namespace, s.name): s.credential_hash for s in orig}
    changed = False
    for s in new:
        coords = (s.uid, s.namespace, s.name)
        if by_coords.get(coords) != s.credential_hash:
            by_coords[coords] = s.credential_hash
            changed = True
    if not changed:
        return orig, False
    merged = [
        ImagePullSecret(uid=uid, namespace=ns, name=name, credential_hash=h)
        for (uid, ns, name), h in by_coords.items()
    ]
    merged.sort(key=_coords_key)
    return merged, True


def merge_pull_service_accounts(
    orig: list[ImagePullServiceAccount], new: Iterable[ImagePullServiceAccount]
) -> tuple[list[ImagePullServiceAccount], bool]:
    """Set union of exact (uid, namespace, name), sorted by namespace, name, uid."""
    accounts = {_coords_key(s): s for s in orig}
    changed = False
    for s in new:
        if _coords_key(s) not in accounts:
            accounts[_coords_key(s)] = s
            changed = True
    if not changed:
        return orig, False
    return sorted(accounts.values(), key=_coords_key), True


def merge_pulled_record(
    orig: ImagePulledRecord,
    key: str,
    new: ImagePullCredentials | None,
    now: dt.datetime,
) -> tuple[ImagePulledRecord, bool]:
    """``pulledRecordMergeNewCreds``: ``orig`` with ``new`` merged under ``key``.

    Returns (record, changed); ``orig`` itself is never modified, and a changed record carries
    ``lastUpdatedTime = now``.
    """
    if new is None or new.is_empty():
        # Nothing to record: a credential-less pull must not grant anything.
        return orig, False
    entry = orig.credential_mapping.get(key)
    if entry is None:
        updated = new.model_copy(deep=True)
    elif entry.node_pods_accessible:
        # Every pod on the node may already use the image: nothing can widen that.
        return orig, False
    elif new.node_pods_accessible:
        updated = ImagePullCredentials(nodePodsAccessible=True)
    elif new.secrets:
        # Secrets take precedence: callers pass one kind of credential per pull.
        secrets, changed = merge_pull_secrets(entry.secrets, new.secrets)
        if not changed:
            return orig, False
        updated = entry.model_copy(update={"kubernetes_secrets": secrets}, deep=True)
    else:
        accounts, changed = merge_pull_service_accounts(
            entry.service_accounts, new.service_accounts
        )
        if not changed:
            return orig, False
        updated = entry.model_copy(update={"kubernetes_service_accounts": accounts}, deep=True)
    mapping = {k: v.model_copy(deep=True) for k, v in orig.credential_mapping.items()}
    mapping[key] = updated
    return _record(orig.image_ref, mapping, now), True


def _record(
    image_ref: str, mapping: dict[str, ImagePullCredentials], now: dt.datetime
) -> ImagePulledRecord:
    return ImagePulledRecord(imageRef=image_ref, credentialMapping=mapping, lastUpdatedTime=now)


# -- the manager --------------------------------------------------------------------------------


class ImagePullManager:
    """Tracks kubelet pulls and decides whether a pod must re-authenticate for a present image.

    Args:
        root: the kubelet root directory (records live in ``<root>/image_manager``).
        policy: an ``imagePullCredentialsVerificationPolicy`` name, or a ready policy object
            with ``require_credential_verification(image, image_pulled_by_kubelet)``.
        allowlist: ``preloadedImagesVerificationAllowlist`` (used with a policy name only).
        runtime: the CRI image service; when given, :meth:`initialize` runs now.
        clock: a :class:`credprov.base.clock.Clock` (its wall-clock ``time()`` stamps records).
        accessor: where records live; default the file store under ``root`` behind the
            in-memory LRU layer.
        metrics: where results and gauges go; default ``PullManagerMetrics`` when available.
        record_max_age: credential entries of records older than this must authenticate again
            (None = the kubelet's behaviour: records never expire).
        intents_cache_size, records_cache_size: sizes of the default in-memory layer;
            default the largest upstream allows (1024 and 2000). Upstream's tests use 50
            and 100 and the kubelet's own constants are not known to us; the largest sizes
            cost a few MB at most, keep the layer authoritative (no disk read on a miss)
            on any node with fewer images than that, and keep it from being slower than no
            cache when many images are checked evenly (a 100-slot cache over 10,000 records
            hits 1% of the time, less than its own lookup costs).
        lock_stripes: stripes per in-process lock set (the kubelet passes
            ``maxParallelImagePulls``; capped at 31).
        shared_root: another process writes under ``root`` too (the CLI next to a daemon):
            the default in-memory layer then never trusts a cache miss.

    Raises:
        ValueError: an unknown policy name or an invalid allowlist pattern.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        policy: str | VerificationPolicy,
        allowlist: Iterable[str] = (),
        runtime: ImageService | None = None,
        clock: Clock | None = None,
        *,
        accessor: PullRecordsAccessor | None = None,
        metrics: PullManagerMetricsSink | None = None,
        record_max_age: dt.timedelta | None = None,
        intents_cache_size: int = 1024,
        records_cache_size: int = 2000,
        lock_stripes: int = MAX_LOCK_STRIPES,
        shared_root: bool = False,
        track_preloaded: bool = False,
    ) -> None:
        self._root = os.fspath(root)
        self._clock = clock or RealClock()
        self._record_max_age = record_max_age
        self._metrics = metrics if metrics is not None else _default_metrics()
        self._policy, self._trim = _resolve_policy(policy, tuple(allowlist))
        self._fs: Any = None
        self._cache: Any = None
        if accessor is None:
            accessor = self._default_accessor(
                self._root, intents_cache_size, records_cache_size, shared_root
            )
        self._accessor: PullRecordsAccessor = accessor
        # The layer that owns the cross-process lock is the one whose reads are current while
        # it is held; layers above it (the LRU) may serve another process's old version.
        self._locker, self._store_of_record = _find_locker(accessor)
        self._intent_locks = StripedLockSet(lock_stripes)
        self._record_locks = StripedLockSet(lock_stripes)
        # image -> pulls in flight in this process (``intentCounters``); guarded by the image's
        # intent stripe.
        self._intent_counters: dict[str, int] = {}
        self._runtime = runtime
        # Beyond upstream (#138175): remember the names preloaded images were present under.
        self._preloaded: Any = None
        if track_preloaded:
            if self._fs is None:
                raise ValueError("track_preloaded needs the default file store (no accessor)")
            from credprov.pullmanager.preloaded import PreloadedImages

            self._preloaded = PreloadedImages(self._fs, self._flock)
            # Once: observations written under upstream's #139156 directory move to credprov's.
            self._preloaded.migrate()
        self._refresh_gauges()
        if runtime is not None:
            self.initialize()
        # The file store kept what its start-up scan decoded for the lists above; from
        # now on every list reads the files.
        forget = getattr(self._store_of_record, "forget_startup_scan", None)
        if forget is not None:
            forget()

    # -- construction helpers --

    def _default_accessor(
        self, root: str, intents_cache_size: int, records_cache_size: int, shared_root: bool
    ) -> PullRecordsAccessor:
        # Imported here: the store modules import heavier things and are optional for callers
        # that inject their own accessor.
        from credprov.pullmanager.fsstore import FSPullRecordsAccessor
        from credprov.pullmanager.memstore import CachedPullRecordsAccessor

        self._fs = FSPullRecordsAccessor(root, on_change=self._on_disk_change)
        self._cache = CachedPullRecordsAccessor(
            self._fs,
            intents_cache_size=intents_cache_size,
            pulled_records_cache_size=records_cache_size,
            on_change=self._on_memory_change,
            # A miss must be re-read from disk when another process may have written it:
            # a stale "absent" would make a kubelet-pulled image look preloaded.
            authoritative=not shared_root,
        )
        return self._cache

    def _on_disk_change(self, *_: object) -> None:
        if self._metrics is None or self._fs is None:
            return
        try:
            self._metrics.set_ondisk(self._fs.count_intents(), self._fs.count_records())
        except OSError:  # counting files must never fail a pull
            log.debug("cannot refresh on-disk gauges", exc_info=True)

    def _on_memory_change(self, intents_pct: int, records_pct: int) -> None:
        if self._metrics is None:
            return
        self._metrics.set_inmemory(intents_pct, records_pct)

    def _refresh_gauges(self) -> None:
        self._on_disk_change()
        if self._cache is not None:
            self._on_memory_change(
                self._cache.intents_usage_percent(), self._cache.records_usage_percent()
            )

    # -- small helpers --

    def _now(self) -> dt.datetime:
        # Records hold whole seconds on disk; stamping whole seconds keeps the in-memory layer
        # and the file identical, so prune's "before until" agrees across restarts.
        return utc_now(self._clock).replace(microsecond=0)

    def _flock(self, kind: str, key: str) -> contextlib.AbstractContextManager[Any]:
        if self._locker is None:
            return contextlib.nullcontext()
        return self._locker(kind, key)

    def _expired(self, record: ImagePulledRecord, now: dt.datetime | None = None) -> bool:
        if self._record_max_age is None:
            return False
        age = (now or self._now()) - record.last_updated_time
        return age > self._record_max_age

    def intent_count(self, image: str) -> int:
        """Pulls of exactly ``image`` in flight in this process."""
        with self._intent_locks.lock(image):
            return self._intent_counters.get(image, 0)

    # -- intents --

    def record_pull_intent(self, image: str) -> None:
        """Write the intent for ``image`` before pulling it (``RecordPullIntent``).

        Raises:
            PullIntentError: the intent could not be written; the pull must not happen, or
                a crash mid-pull would leave the image looking preloaded.
        """
        with self._intent_locks.lock(image):
            try:
                # Written even when a pull is already in flight: the file may have been lost.
                with self._flock(LOCK_KIND_INTENT, image):
                    self._accessor.write_image_pull_intent(image)
            except StoreWriteError as exc:
                raise PullIntentError(f"failed to record image pull intent: {exc}") from exc
            self._intent_counters[image] = self._intent_counters.get(image, 0) + 1

    def _decrement_intent(self, image: str) -> None:
        with self._intent_locks.lock(image):
            count = self._intent_counters.get(image, 0)
            if count > 1:
                self._intent_counters[image] = count - 1
                return
            try:
                with self._flock(LOCK_KIND_INTENT, image):
                    self._accessor.delete_image_pull_intent(image)
            except StoreWriteError as exc:
                # Keep the counter: the file is still there, and the two must agree.
                log.error("failed to remove image pull intent for %r: %s", image, exc)
                return
            self._intent_counters.pop(image, None)

    def record_image_pull_failed(self, image: str) -> None:
        """The pull of ``image`` failed: release its intent (``RecordImagePullFailed``)."""
        self._decrement_intent(image)

    def record_image_pulled(
        self, image: str, image_ref: str, credentials: ImagePullCredentials | None
    ) -> None:
        """The pull of ``image`` (now ``image_ref``) succeeded with ``credentials``.

        ``None`` credentials mean "pulled under unknown circumstances": the record is written
        without granting anything. When the record cannot be written the intent stays, so the
        image keeps counting as kubelet-pulled (converted on the next start).
        """
        try:
            self._write_pulled_record_if_changed(image, image_ref, credentials, pulled=True)
        except (StoreWriteError, ValueError) as exc:
            log.error("failed to write image pulled record for %r: %s", image_ref, exc)
            return
        if self._preloaded is not None:
            # The kubelet pulled this name itself: it is no longer preloaded (#139156 rule).
            self._preloaded.drop_name(image_ref, image)
        self._decrement_intent(image)

    # -- records --

    def _write_pulled_record_if_changed(
        self,
        image: str,
        image_ref: str,
        credentials: ImagePullCredentials | None,
        *,
        pulled: bool,
    ) -> bool:
        """``writePulledRecordIfChanged``; ``pulled`` is False for writes made while matching.

        Returns whether a record was written. Raises ValueError for an invalid image name
        (the policies module's ``InvalidImageNameError`` already reads "invalid image name
        ...") and StoreWriteError when the write or the cross-process lock fails.
        """
        key = self._trim(image)
        with self._record_locks.lock(image_ref), self._flock(LOCK_KIND_RECORD, image_ref):
            try:
                current = self._store_of_record.get_image_pulled_record(image_ref)
            except StoreReadError as exc:
                # Fail safe: the broken file is replaced by what we know now.
                log.info("failed to retrieve the pulled record for %r: %s", image_ref, exc)
                current = None
            now = self._now()
            if current is None:
                if not pulled and self._record_max_age is not None:
                    # The record matched against is gone: what was learnt from it has no
                    # verification time to inherit.
                    return False
                mapping = {}
                if credentials is not None:
                    mapping[key] = credentials.model_copy(deep=True)
                record = _record(image_ref, mapping, now)
            elif self._record_max_age is None:
                record, changed = merge_pulled_record(current, key, credentials, now)
                if not changed:
                    return False
            elif self._expired(current, now):
                if not pulled or credentials is None or credentials.is_empty():
                    # Only a pull that just succeeded with these credentials may refresh it.
                    return False
                record = _record(image_ref, {key: credentials.model_copy(deep=True)}, now)
            else:
                # Keep the record's time: new entries were verified later than it, never earlier.
                record, changed = merge_pulled_record(
                    current, key, credentials, current.last_updated_time
                )
                if not changed:
                    return False
            self._accessor.write_image_pulled_record(record)
            return True

    def must_attempt_image_pull(
        self, image: str, image_ref: str, get_pod_credentials: GetPodCredentials
    ) -> bool:
        """Whether the pod must pull ``image`` although ``image_ref`` is present.

        ``MustAttemptImagePull``: True means "pull to prove access" (IfNotPresent pulls, Never
        fails). ``get_pod_credentials`` is called only when a cached secret or service account
        could match; its exception propagates (after counting ``error``).
        """
        if not image_ref:
            # The image is not present: there is nothing to decide (and nothing to count).
            return True
        result = RESULT_ERROR
        try:
            must_pull, result = self._must_attempt(image, image_ref, get_pod_credentials)
            return must_pull
        finally:
            if self._metrics is not None:
                self._metrics.must_pull_check(result)

    def _must_attempt(
        self, image: str, image_ref: str, get_pod_credentials: GetPodCredentials
    ) -> tuple[bool, str]:
        """``MustAttemptImagePull``'s decision table, in upstream's order: (must pull,
        the ``image_pull_manager_must_pull_checks`` result)."""
        # Steps 1-2.
        try:
            record, pulled_by_kubelet = self._read_record(image, image_ref)
        except StoreReadError as exc:
            # Fail safe: an unreadable record or intent means "verify".
            log.error("Unable to access cache records about image pulls: %s", exc)
            return True, RESULT_ERROR

        # Step 3.
        if not self._policy.require_credential_verification(image, pulled_by_kubelet):
            return False, RESULT_POLICY_ALLOWED
        # Step 4: intent only, or an image the kubelet never saw under a policy that verifies.
        if record is None:
            return True, RESULT_MUST_AUTHENTICATE
        # Step 5.
        try:
            key = self._trim(image)
        except ValueError as exc:
            log.error("failed to parse image name %r, forcing re-verification: %s", image, exc)
            return True, RESULT_ERROR
        # Step 6: the same imageRef recorded under another name grants nothing to this one.
        entry = record.credential_mapping.get(key)
        if entry is None:
            return True, RESULT_MUST_AUTHENTICATE
        # (_expired checks the age setting too; tested here first to spare the hot path a call.)
        if self._record_max_age is not None and self._expired(record):
            return True, RESULT_MUST_AUTHENTICATE
        # Step 7.
        if entry.node_pods_accessible:
            return False, RESULT_RECORD_FOUND
        # Step 8: a tracked image without credentials (e.g. converted from an intent).
        if not entry.kubernetes_secrets and not entry.kubernetes_service_accounts:
            return True, RESULT_MUST_AUTHENTICATE
        # Steps 9-12.
        return self._match_pod_credentials(image, image_ref, entry, get_pod_credentials)

    def _read_record(self, image: str, image_ref: str) -> tuple[ImagePulledRecord | None, bool]:
        """(record, pulled by the kubelet) for steps 1-2. Raises StoreReadError.

        A record found settles "pulled by the kubelet" on its own, and reading it is one
        read that the accessor makes atomic (a write replaces the whole record): done
        without the locks it equals a locked read made just before or just after any
        concurrent write, so the common case skips two lock round trips. A missing record
        (then the intent decides), or preloaded-name tracking (which reads the intent too),
        takes the locks and reads again.
        """
        if self._preloaded is None:
            record = self._accessor.get_image_pulled_record(image_ref)
            if record is not None:
                return record, True
        return self._read_locked(image, image_ref)

    def _match_pod_credentials(
        self,
        image: str,
        image_ref: str,
        entry: ImagePullCredentials,
        get_pod_credentials: GetPodCredentials,
    ) -> tuple[bool, str]:
        """Steps 9-12: whether the pod's secrets or service account match ``entry`` (the
        record's credentials for this image), learning a matching secret's new coordinates
        or a rotated secret's new hash."""
        cached_secrets = entry.kubernetes_secrets or ()
        # Step 9: only now may plugins run (PR #133079).
        pod_secrets, pod_service_account = get_pod_credentials()
        # Step 10.
        may_write = len(cached_secrets) < WRITE_RECORD_WHILE_MATCHING_LIMIT
        for pod_secret in pod_secrets:
            pod_hash = pod_secret.credential_hash
            for cached in cached_secrets:
                # An empty cached hash means hashing failed: it matches nothing.
                cached_hash = cached.credential_hash
                if cached_hash and pod_hash == cached_hash:
                    if may_write and not (
                        pod_secret.uid == cached.uid
                        and pod_secret.namespace == cached.namespace
                        and pod_secret.name == cached.name
                    ):
                        # Same credential in another secret: remember it for next time.
                        self._learn(image, image_ref, pod_secret)
                    return False, RESULT_RECORD_FOUND
                if (
                    may_write
                    and pod_secret.uid == cached.uid
                    and pod_secret.namespace == cached.namespace
                    and pod_secret.name == cached.name
                ):
                    # The secret that pulled was rotated: trust it and store the new hash.
                    self._learn(image, image_ref, pod_secret)
                    return False, RESULT_RECORD_FOUND
        # Step 11: service accounts match exactly (audience is not considered upstream).
        if pod_service_account is not None and any(
            _coords_key(sa) == _coords_key(pod_service_account) for sa in entry.service_accounts
        ):
            return False, RESULT_RECORD_FOUND
        # Step 12.
        return True, RESULT_MUST_AUTHENTICATE

    def _read_locked(self, image: str, image_ref: str) -> tuple[ImagePulledRecord | None, bool]:
        """(record, pulled by the kubelet), read under both locks so no write changes the
        files between the reads. Raises StoreReadError."""
        accessor = self._accessor
        with self._record_locks.lock(image_ref), self._intent_locks.lock(image):
            record = accessor.get_image_pulled_record(image_ref)
            if record is None:
                # The counter is only a shortcut: after a restart only the file says so.
                pulled = self._intent_counters.get(image, 0) > 0
                return None, pulled or accessor.image_pull_intent_exists(image)
            if (
                self._preloaded is not None
                and self._intent_counters.get(image, 0) == 0
                and not accessor.image_pull_intent_exists(image)
                and self._preloaded.is_preloaded_name(image_ref, image)
            ):
                # The record came from pulling another name of the same image; this name
                # was on the node before any pull (#138175): still preloaded.
                return None, False
            return record, True

    def _learn(self, image: str, image_ref: str, secret: ImagePullSecret) -> None:
        creds = ImagePullCredentials(kubernetesSecrets=[secret])
        try:
            self._write_pulled_record_if_changed(image, image_ref, creds, pulled=False)
        except (StoreWriteError, ValueError) as exc:
            # The decision stands; the next check simply learns again.
            log.error("failed to write an image pulled record for %r: %s", image_ref, exc)

    def prune_unknown_records(self, image_refs: Iterable[str], until: dt.datetime) -> None:
        """Delete records older than ``until`` whose imageRef the runtime no longer has.

        ``PruneUnknownRecords``, the image GC's post hook: ``until`` is taken before the
        runtime's image list, so a record written during GC survives. Intents are untouched.
        """
        in_use = set(image_refs)
        if until.tzinfo is None:
            until = until.replace(tzinfo=dt.UTC)  # records carry UTC times
        with self._record_locks.global_lock():
            records, errors = self._accessor.list_image_pulled_records()
            for message in errors:
                log.error("listing pulled records, pruning an incomplete list: %s", message)
            for record in records:
                if record.last_updated_time >= until or record.image_ref in in_use:
                    continue
                try:
                    with self._flock(LOCK_KIND_RECORD, record.image_ref):
                        if self._locker is not None and not self._still_prunable(record, until):
                            continue
                        self._accessor.delete_image_pulled_record(record.image_ref)
                except StoreWriteError as exc:
                    log.error("failed to remove pulled record for %r: %s", record.image_ref, exc)
                if self._preloaded is not None:
                    self._preloaded.forget(record.image_ref)

    def _still_prunable(self, listed: ImagePulledRecord, until: dt.datetime) -> bool:
        # Another process may have refreshed the record since we listed it.
        try:
            current = self._store_of_record.get_image_pulled_record(listed.image_ref)
        except StoreReadError:
            return True  # an unreadable stale record is no loss
        return current is None or current.last_updated_time < until

    def initialize(self, runtime: ImageService | None = None) -> None:
        """Start-up housekeeping (``initialize``): settle intents left by a previous run.

        An intent whose image string is one of a runtime image's RepoTags or RepoDigests means
        the pull finished but its record was never written: record the image as kubelet-pulled
        without credentials (the next use must authenticate) and drop the intent. Other intents
        stay, keeping their exact image string "kubelet-pulled". ``runtime`` defaults to the
        one given to the constructor; without any, nothing can be settled.
        """
        runtime = runtime or self._runtime
        if runtime is None:
            return
        intents, errors = self._accessor.list_image_pull_intents()
        for message in errors:
            log.error("listing pull intents, continuing with an incomplete list: %s", message)
        if not intents and self._preloaded is None:
            return
        try:
            images = runtime.list_images()
        except Exception as exc:  # the runtime may be down; the intents keep us fail-safe
            log.error("failed to list images: %s", exc)
            images = []
        if self._preloaded is not None:
            self._observe_preloaded(images, {intent.image for intent in intents})
        if not intents:
            return
        pending = {intent.image for intent in intents}
        for runtime_image in images:
            names = {*runtime_image.repo_digests, *runtime_image.repo_tags} & pending
            for name in sorted(names):
                try:
                    self._write_pulled_record_if_changed(name, runtime_image.id, None, pulled=True)
                except (StoreWriteError, ValueError) as exc:
                    # Keep the intent: without a record it is all that marks the image.
                    log.error(
                        "failed to write image pulled record for %r: %s", runtime_image.id, exc
                    )
                    continue
                try:
                    with self._intent_locks.lock(name), self._flock(LOCK_KIND_INTENT, name):
                        self._accessor.delete_image_pull_intent(name)
                except StoreWriteError as exc:
                    log.debug("failed to remove image pull intent for %r: %s", name, exc)

    def _observe_preloaded(self, images: Iterable[Any], intent_images: set[str]) -> None:
        """Record the names of runtime images the kubelet has no record of (#138175)."""
        for runtime_image in images:
            names = [*runtime_image.repo_tags, *runtime_image.repo_digests]
            if not names or intent_images & set(names):
                continue  # a pull of it was in flight: not preloaded
            try:
                with self._record_locks.lock(runtime_image.id):
                    if self._accessor.get_image_pulled_record(runtime_image.id) is not None:
                        continue  # only ids without a record can be observed as preloaded
                    if self._preloaded.observed(runtime_image.id):
                        continue  # first observation wins: names are never added later
                    self._preloaded.observe(runtime_image.id, names)
            except (StoreReadError, StoreWriteError) as exc:
                log.error("failed to observe preloaded image %r: %s", runtime_image.id, exc)


# -- wiring -------------------------------------------------------------------------------------


def _resolve_policy(
    policy: str | VerificationPolicy, allowlist: tuple[str, ...]
) -> tuple[VerificationPolicy, Callable[[str], str]]:
    """The policy object and the credential-mapping key function (``trimImageTagDigest``).

    A policy object may bring its own ``trim_image_tag_digest`` (tests, embedders); otherwise
    the policies module's is used, so records and allowlists normalize names the same way.
    """
    if isinstance(policy, str):
        from credprov.pullmanager.policies import new_verification_policy

        resolved: VerificationPolicy = new_verification_policy(policy, allowlist)
    else:
        resolved = policy
    trim = getattr(resolved, "trim_image_tag_digest", None)
    if not callable(trim):
        from credprov.pullmanager.policies import trim_image_tag_digest

        trim = trim_image_tag_digest
    return resolved, trim


def _default_metrics() -> PullManagerMetricsSink:
    # Each PullManagerMetrics has a registry of its own: building one cannot collide with
    # another manager's (or a host application's) metrics, so nothing is swallowed here.
    from credprov.pullmanager.metrics import PullManagerMetrics

    return PullManagerMetrics()


def _find_locker(
    accessor: PullRecordsAccessor,
) -> tuple[Callable[[str, str], Any] | None, PullRecordsAccessor]:
    """The cross-process ``locked(kind, key)`` and the layer offering it.

    Looks through wrapping layers (``delegate``/``_delegate``, as the in-memory layer keeps
    the file store). Without a lock, (None, ``accessor``).
    """
    seen: set[int] = set()
    current: Any = accessor
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        locked = getattr(current, "locked", None)
        if callable(locked):
            # A proxy may forward ``locked`` by __getattr__: the owner is the bound instance.
            return locked, getattr(locked, "__self__", current)
        current = getattr(current, "delegate", None) or getattr(current, "_delegate", None)
    return None, accessor
