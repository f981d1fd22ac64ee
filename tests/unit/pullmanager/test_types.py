"""Record decoding: the fast path for an encoder's exact bytes agrees with the strict path.

``decode_intent``/``decode_record`` take a fast path for files exactly as an encoder writes
them and the strict path for everything else. The two must never disagree: whatever the
fast path accepts, the strict path decodes to the same objects (values, types, fields set),
and whatever it declines the strict path decides alone (``well_formed_*_version`` says which).
"""

from __future__ import annotations

import datetime as dt
import random
import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credprov.pullmanager import types
from credprov.pullmanager.types import (
    ImagePullCredentials,
    ImagePulledRecord,
    ImagePullIntent,
    ImagePullSecret,
    ImagePullServiceAccount,
    RecordDecodeError,
    decode_intent,
    decode_record,
    encode_intent,
    encode_record,
    well_formed_intent_version,
    well_formed_record_version,
)

T = dt.datetime(2024, 10, 21, 12, 26, 40, tzinfo=dt.UTC)
SECRET = ImagePullSecret(uid="u1", namespace="ns", name="pull", credential_hash="h" * 64)
ACCOUNT = ImagePullServiceAccount(uid="u2", namespace="ns", name="sa")
HEAD = '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1",'
GOOD = HEAD + '"lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"sha256:1"'
INTENT = '{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1","image":"a:b"}'


def _state(value: Any) -> Any:
    """Everything that tells two decoded objects apart: types, values, fields set, extras."""
    if isinstance(value, list):
        return ["list", [_state(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [(k, _state(v)) for k, v in value.items()]]
    if hasattr(value, "__pydantic_fields_set__"):
        return [
            type(value),
            _state(value.__dict__),
            sorted(value.__pydantic_fields_set__),
            value.__pydantic_extra__,
            value.__pydantic_private__,
        ]
    if isinstance(value, dt.datetime):
        return [value, type(value.tzinfo), value.utcoffset()]
    return [type(value), value]


def _outcome(decode: Any, data: bytes) -> Any:
    try:
        version, obj = decode(data)
    except RecordDecodeError as exc:
        return ("error", str(exc))
    return (version, _state(obj))


def _agree(data: bytes) -> None:
    """decode_* equals its strict path on ``data``, and well_formed_* says when it is fast."""
    for decode, strict, fast, well_formed in (
        (
            decode_record,
            types._decode_record_strict,
            types._fast_record,
            well_formed_record_version,
        ),
        (
            decode_intent,
            types._decode_intent_strict,
            types._fast_intent,
            well_formed_intent_version,
        ),
    ):
        got = _outcome(decode, data)
        assert got == _outcome(strict, data)
        version, built = fast(data.decode("utf-8", "replace"))
        assert well_formed(data) == version
        if built is not None:
            assert got == (version, _state(built))


# -- what the fast path takes -----------------------------------------------------------------

_RECORDS = {
    "no mapping": ImagePulledRecord(lastUpdatedTime=T, imageRef="sha256:1"),
    "empty mapping": ImagePulledRecord(lastUpdatedTime=T, imageRef="r", credentialMapping={}),
    "one secret": ImagePulledRecord(
        lastUpdatedTime=T,
        imageRef="sha256:1",
        credentialMapping={"r.io/a": ImagePullCredentials(kubernetesSecrets=[SECRET])},
    ),
    "every field": ImagePulledRecord(
        lastUpdatedTime=T,
        imageRef="sha256:1",
        credentialMapping={
            "r.io/a": ImagePullCredentials(
                kubernetesSecrets=[SECRET, SECRET.model_copy(update={"uid": "u3"})],
                kubernetesServiceAccounts=[ACCOUNT],
                nodePodsAccessible=True,
            ),
            "r.io/b": ImagePullCredentials(kubernetesServiceAccounts=[ACCOUNT, ACCOUNT]),
            "r.io/c": ImagePullCredentials(nodePodsAccessible=True),
            "r.io/d": ImagePullCredentials(),
            "": ImagePullCredentials(kubernetesSecrets=[SECRET]),
        },
    ),
    "odd strings": ImagePulledRecord(
        lastUpdatedTime=T,
        imageRef="sha256:{}[],:é😀",
        credentialMapping={
            "{a:1},[]": ImagePullCredentials(
                kubernetesSecrets=[
                    ImagePullSecret(uid="}", namespace="]", name=",", credential_hash="")
                ]
            )
        },
    ),
}


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
@pytest.mark.parametrize("name", list(_RECORDS))
def test_encoded_records_take_the_fast_path(name: str, version: str) -> None:
    record = _RECORDS[name]
    data = encode_record(record, version)
    assert well_formed_record_version(data) == version
    got_version, got = decode_record(data)
    assert (got_version, got) == (version, record)
    assert _state(got) == _state(types._decode_record_strict(data)[1])
    _agree(data)


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_encoded_intents_take_the_fast_path(version: str) -> None:
    for image in ("a:b", "r.io/x@sha256:" + "0" * 64, "", "é😀{}[],:"):
        data = encode_intent(ImagePullIntent(image=image), version)
        assert well_formed_intent_version(data) == version
        assert decode_intent(data) == (version, ImagePullIntent(image=image))
        _agree(data)


# The strict path accepts these too; the fast one also does, with the same result.
_ALSO_FAST = {
    "no trailing newline": GOOD + "}",
    "empty lists and false": GOOD + ',"credentialMapping":{"a":{"kubernetesSecrets":[],'
    '"kubernetesServiceAccounts":[],"nodePodsAccessible":false}}}\n',
    "date only": GOOD.replace("2024-10-21T12:26:40Z", "2024-10-21") + "}\n",
    "offset time": GOOD.replace("12:26:40Z", "12:26:40.5+02:00") + "}\n",
    "not UTF-8": GOOD.replace("sha256:1", "sha256:\udcff") + "}\n",
}


@pytest.mark.parametrize("name", list(_ALSO_FAST))
def test_unusual_but_exact_files_agree(name: str) -> None:
    data = _ALSO_FAST[name].encode("utf-8", "surrogateescape")
    assert well_formed_record_version(data) == "v1beta1"
    _agree(data)


# -- what it declines ---------------------------------------------------------------------------

_DECLINED = {
    "whitespace": GOOD.replace(",", ", ") + "}\n",
    "fields reordered": HEAD + '"imageRef":"sha256:1","lastUpdatedTime":"2024-10-21T12:26:40Z"}',
    "escape": GOOD.replace("sha256:1", "sha256:\\u0031") + "}\n",
    "escaped quote": GOOD.replace("sha256:1", 'sha256:\\"') + "}\n",
    "null secrets (1.33)": GOOD + ',"credentialMapping":{"a":{"kubernetesSecrets":null}}}',
    "null mapping": GOOD + ',"credentialMapping":null}',
    "repeated mapping key": GOOD + ',"credentialMapping":{"a":{},"a":{"nodePodsAccessible":true}}}',
    "repeated key, far apart": GOOD
    + ',"credentialMapping":{"a":{},"b":{},"c":{},"a":{"nodePodsAccessible":true}}}',
    "repeated field": GOOD + ',"imageRef":"sha256:2"}',
    "repeated nested field": GOOD
    + ',"credentialMapping":{"a":{"nodePodsAccessible":true,"nodePodsAccessible":false}}}',
    "unknown field": GOOD + ',"bogus":"x"}',
    "unknown nested field": GOOD + ',"credentialMapping":{"a":{"bogus":true}}}',
    "secret without hash": GOOD
    + ',"credentialMapping":{"a":{"kubernetesSecrets":[{"uid":"u","namespace":"n","name":"m"}]}}}',
    "leading comma": GOOD + ',"credentialMapping":{"a":{,"nodePodsAccessible":true}}}',
    "trailing comma": GOOD + ',"credentialMapping":{"a":{},}}',
    "trailing comma in list": GOOD
    + ',"credentialMapping":{"a":{"kubernetesServiceAccounts":[{"uid":"u","namespace":"n",'
    '"name":"m"},]}}}',
    "number": GOOD.replace('"sha256:1"', "1") + "}",
    "string flag": GOOD + ',"credentialMapping":{"a":{"nodePodsAccessible":"true"}}}',
    "bad time": GOOD.replace("2024-10-21T12:26:40Z", "2024-13-21T12:26:40Z") + "}",
    "not a time": GOOD.replace("2024-10-21T12:26:40Z", "yesterday") + "}",
    "control character": GOOD.replace("sha256:1", "sha256:\t") + "}",
    "two newlines": GOOD + "}\n\n",
    "trailing data": GOOD + "}{}",
    "unknown version": GOOD.replace("v1beta1", "v1") + "}",
    "intent as record": INTENT,
    "yaml": "kind: ImagePulledRecord\n",
    "empty": "",
}


@pytest.mark.parametrize("name", list(_DECLINED))
def test_other_files_take_the_strict_path(name: str) -> None:
    data = _DECLINED[name].encode()
    assert well_formed_record_version(data) is None
    assert types._fast_record(data.decode())[1] is None
    _agree(data)


@pytest.mark.parametrize(
    "text",
    [
        INTENT.replace(",", ", "),
        INTENT.replace('"a:b"', '"a:\\u0062"'),
        INTENT[:-1] + ',"image":"c"}',
        INTENT[:-1] + ',"bogus":1}',
        INTENT.replace('"a:b"', "null"),
        INTENT.replace("ImagePullIntent", "ImagePulledRecord"),
        INTENT + "\n\n",
    ],
)
def test_other_intents_take_the_strict_path(text: str) -> None:
    data = text.encode()
    assert well_formed_intent_version(data) is None
    _agree(data)


def test_a_hostile_megabyte_is_declined_in_linear_time() -> None:
    # A near miss at the very end of a long, nested mapping: a backtracking pattern would
    # retry every earlier choice.
    secret = '{"uid":"u","namespace":"n","name":"m","credentialHash":"h"}'
    entry = '"r.io/%d":{"kubernetesSecrets":[' + ",".join([secret] * 20) + "]}"
    entries = ",".join(entry % i for i in range(800))
    data = (GOOD + ',"credentialMapping":{' + entries + ',"x":{"kubernetesSecrets":[}}}').encode()
    assert len(data) < 1 << 20
    start = time.process_time()
    assert well_formed_record_version(data) is None
    assert time.process_time() - start < 1.0
    with pytest.raises(RecordDecodeError):
        decode_record(data)


# -- generated --------------------------------------------------------------------------------

_TEXT = st.text(
    st.one_of(
        st.sampled_from('"\\{}[],:<>&\t\n\u2028é😀 '),
        st.characters(codec="utf-8"),
    ),
    max_size=12,
)
# Text the encoder writes as it is (no escape): the fast path must take every such record.
_PLAIN = st.text(
    st.characters(codec="utf-8", min_codepoint=0x20, exclude_characters='"\\<>&\u2028\u2029'),
    max_size=12,
)


def _records(text: st.SearchStrategy[str]) -> st.SearchStrategy[ImagePulledRecord]:
    # (st.builds on the models themselves would also pass the aliases it sees in the signature.)
    secrets = st.tuples(text, text, text, text).map(
        lambda t: ImagePullSecret.model_validate(
            {"uid": t[0], "namespace": t[1], "name": t[2], "credentialHash": t[3]}
        )
    )
    accounts = st.tuples(text, text, text).map(
        lambda t: ImagePullServiceAccount(uid=t[0], namespace=t[1], name=t[2])
    )
    credentials = st.tuples(
        st.none() | st.lists(secrets, max_size=3),
        st.none() | st.lists(accounts, max_size=3),
        st.booleans(),
    ).map(
        lambda t: ImagePullCredentials.model_validate(
            {
                "kubernetesSecrets": t[0],
                "kubernetesServiceAccounts": t[1],
                "nodePodsAccessible": t[2],
            }
        )
    )
    return st.tuples(
        # (encode_record writes years before 1000 without their leading zeros: not a record.)
        st.datetimes(
            min_value=dt.datetime(1000, 1, 1),
            max_value=dt.datetime(9999, 12, 31),
            timezones=st.just(dt.UTC),
        ).map(lambda t: t.replace(microsecond=0)),
        text,
        st.dictionaries(text, credentials, max_size=4),
    ).map(lambda t: ImagePulledRecord(lastUpdatedTime=t[0], imageRef=t[1], credentialMapping=t[2]))


_RECORD = _records(_TEXT)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_records(_PLAIN), version=st.sampled_from(["v1alpha1", "v1beta1"]))
def test_generated_plain_records_take_the_fast_path(
    record: ImagePulledRecord, version: str
) -> None:
    data = encode_record(record, version)
    assert well_formed_record_version(data) == version
    _agree(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_RECORD, version=st.sampled_from(["v1alpha1", "v1beta1"]))
def test_generated_records_agree(record: ImagePulledRecord, version: str) -> None:
    data = encode_record(record, version)
    _agree(data)
    # Re-encoded, what either path decodes is the file again (omitempty drops empty lists).
    assert encode_record(decode_record(data)[1], version) == data


@settings(max_examples=300, deadline=None)
@given(image=_TEXT, version=st.sampled_from(["v1alpha1", "v1beta1"]))
def test_generated_intents_agree(image: str, version: str) -> None:
    data = encode_intent(ImagePullIntent(image=image), version)
    _agree(data)
    assert decode_intent(data) == (version, ImagePullIntent(image=image))


def _mutations(data: bytes, rng: random.Random) -> list[bytes]:
    """Hostile neighbours of a valid file: bytes dropped, inserted, swapped, repeated."""
    out = []
    for _ in range(40):
        i = rng.randrange(len(data))
        j = rng.randrange(i, min(len(data), i + 40) + 1)
        byte = rng.choice(b'"\\{}[],: \n\x00\xff0ax')
        out += [
            data[:i] + data[i + 1 :],
            data[:i] + bytes([byte]) + data[i:],
            data[:i] + bytes([byte]) + data[i + 1 :],
            data[:j] + data[i:j] + data[j:],  # a span repeated: duplicate keys and entries
            data[:i] + data[j:],
        ]
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=_RECORD, seed=st.integers(0, 2**32))
def test_mutated_records_agree(record: ImagePulledRecord, seed: int) -> None:
    rng = random.Random(seed)
    for data in _mutations(encode_record(record), rng):
        _agree(data)


@settings(max_examples=30, deadline=None)
@given(image=_TEXT, seed=st.integers(0, 2**32))
def test_mutated_intents_agree(image: str, seed: int) -> None:
    rng = random.Random(seed)
    for data in _mutations(encode_intent(ImagePullIntent(image=image)), rng):
        _agree(data)


@pytest.mark.parametrize(
    "mapping",
    [
        '{"a":{"nodePodsAccessible":true},"a":{}}',
        '{"a":{},"b":{"kubernetesSecrets":[]},"a":{"nodePodsAccessible":true}}',
        '{"b":{},"a":{"kubernetesServiceAccounts":[]},"c":{},"a":{}}',
    ],
)
def test_repeated_mapping_keys_are_never_merged(mapping: str) -> None:
    data = (GOOD + ',"credentialMapping":' + mapping + "}\n").encode()
    assert well_formed_record_version(data) is None
    with pytest.raises(RecordDecodeError, match=re.escape('duplicate field "credentialMapping.a"')):
        decode_record(data)
