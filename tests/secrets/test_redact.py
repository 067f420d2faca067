"""Redaction: every form of a value a command may print is masked, wherever it sits in the
output, and a cut output never shows part of one."""

from __future__ import annotations

import base64
import re
import string
import subprocess
from urllib.parse import quote, quote_plus

from hypothesis import given, settings
from hypothesis import strategies as st

from signet.secrets.redact import Redactor, forms
from tests.secrets.conftest import VALUE, assert_hidden

values = st.text(alphabet=string.ascii_letters + string.digits + "-_./+=:@ %!", min_size=8, max_size=80)
filler = st.binary(max_size=40)


def aligned_parts(value: bytes) -> list[bytes]:
    """Independent of signet.secrets.redact: encode the value after 0, 1 and 2 filler bytes
    and keep the characters that differ from neither filler choice (so they depend on the value
    alone)."""
    parts = []
    for offset in range(3):
        a = base64.b64encode(b"\x00" * offset + value + b"\x00\x00")
        b = base64.b64encode(b"\xff" * offset + value + b"\xff\xff")
        start = -(-offset * 8 // 6)
        end = (offset + len(value)) * 8 // 6
        assert a[start:end] == b[start:end]
        parts.append(a[start:end])
    return parts


@settings(max_examples=150, deadline=None)
@given(values, filler, filler)
def test_base64_of_the_value_inside_any_text_is_masked(value: str, before: bytes, after: bytes) -> None:
    r = Redactor.of({"TOKEN": value})
    raw = value.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(before + raw + after)
        for text in (encoded, encoded.rstrip(b"=")):
            masked, count = r.bytes(b"out: " + text + b" end")
            assert count >= 1
            assert raw not in masked
            # the characters that encode the value alone are gone, at its alignment
            part = aligned_parts(raw)[len(before) % 3]
            if encode is base64.urlsafe_b64encode:
                part = part.replace(b"+", b"-").replace(b"/", b"_")
            assert part not in masked


@settings(max_examples=100, deadline=None)
@given(values, filler, filler)
def test_raw_url_and_hex_forms_are_masked(value: str, before: bytes, after: bytes) -> None:
    r = Redactor.of({"TOKEN": value})
    raw = value.encode()
    for form in (
        raw,
        quote(value, safe="").encode(),
        quote_plus(value).encode(),
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(value, safe="")).encode(),
        raw.hex().encode(),
        raw.hex().upper().encode(),
    ):
        masked, _ = r.bytes(before + form + after)
        assert form not in masked


def test_the_must_show_command_output() -> None:
    """``sh -c 'echo $TOKEN; echo $TOKEN | base64'``, run for real, masked."""
    out = subprocess.run(
        ["sh", "-c", "echo $TOKEN; echo $TOKEN | base64"],
        env={"TOKEN": VALUE, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
    ).stdout
    assert base64.b64encode(VALUE.encode() + b"\n") in out  # the command printed both forms
    masked, count = Redactor.of({"TOKEN": VALUE}).bytes(out)
    assert count == 2 and masked.count(b"[REDACTED:TOKEN]") == 2
    assert_hidden(masked.decode(), "the masked output")


def test_overlapping_forms_of_two_secrets_are_masked_as_one_run() -> None:
    r = Redactor.of({"A_KEY": "abcdefgh12", "B_KEY": "gh12zzzzzz"})
    masked, count = r.bytes(b"<abcdefgh12zzzzzz>")
    assert masked == b"<[REDACTED:A_KEY,B_KEY]>" and count == 1


def test_a_cut_output_never_shows_part_of_a_value() -> None:
    r = Redactor.of({"TOKEN": VALUE})
    data = b"x" * 100 + VALUE.encode()
    for limit in range(95, 100 + len(VALUE)):
        masked, _ = r.bytes(data[: limit + r.margin], limit=limit)
        assert VALUE[:3].encode() not in masked.replace(b"[REDACTED:TOKEN]", b""), limit
        assert len(masked) <= limit + len(b"[REDACTED:TOKEN]")


def test_short_values_are_masked_raw_but_derived_forms_need_length() -> None:
    assert forms("ab") == {b"ab"}
    assert Redactor.of({"PIN": "ab"}).bytes(b"grab a cab")[0] == b"gr[REDACTED:PIN] a c[REDACTED:PIN]"
    assert {base64.b64encode(VALUE.encode()), VALUE.encode().hex().encode()} <= forms(VALUE)


def test_text_masks_a_command_line() -> None:
    assert Redactor.of({"TOKEN": VALUE}).text(f"curl -H 'Authorization: {VALUE}'") == (
        "curl -H 'Authorization: [REDACTED:TOKEN]'"
    )


LONG = "github_pat_11ABCDEFG0123456789_" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123"
"""A value the length of a fine-grained GitHub token (93 characters): its base64 is wrapped."""


def test_base64_wrapped_across_lines_is_masked() -> None:
    r = Redactor.of({"GH_TOKEN": LONG})
    for script in ("echo $T | base64", "echo $T | base64 -w 20", "printf 'x%s' $T | base64 -w 7"):
        out = subprocess.run(
            ["sh", "-c", script], env={"T": LONG, "PATH": "/usr/bin:/bin"}, capture_output=True, check=True
        ).stdout
        assert out.count(b"\n") > 1, script  # the encoding really is wrapped
        masked, count = r.bytes(out)
        assert count == 1, (script, masked)
        unwrapped = masked.replace(b"\n", b"")
        assert base64.b64encode(LONG.encode())[4:40] not in unwrapped
        assert masked.startswith(b"[REDACTED:GH_TOKEN]") or script.startswith("printf"), masked
    crlf = base64.encodebytes(LONG.encode()).replace(b"\n", b"\r\n")
    masked, _ = r.bytes(b"body:\r\n" + crlf)
    assert masked.startswith(b"body:\r\n[REDACTED:GH_TOKEN]"), masked


def test_a_value_split_across_lines_is_masked() -> None:
    masked, count = Redactor.of({"TOKEN": VALUE}).bytes(f"{VALUE[:10]}\n{VALUE[10:]}\nnext line\n".encode())
    assert masked == b"[REDACTED:TOKEN]\nnext line\n" and count == 1
