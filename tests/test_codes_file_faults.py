"""Forged and damaged codes files: every field is checked for type and range before
use, re-checksummed forgeries included, and each failure is one ``phd: error:`` line
naming the file and the field (never an internal error, never a huge allocation)."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from phdlib import codes as C
from phdlib.serving import codes_file
from phdlib.cli import main


@pytest.fixture()
def good(tmp_path):
    rng = np.random.default_rng(0)
    c = codes_file.Codes(np.array(["a", "b", "c"]), np.array([10, 20, 30, 40]),
                     C.pack(rng.random((3, 8)) < 0.5).words, C.pack(rng.random((4, 8)) < 0.5).words,
                     8, "phd", {"method": "vh-phd", "columns": {"user": "u", "item": "i"}})
    return codes_file.save_codes(c, tmp_path / "good.npz")


def _fields(path) -> dict:
    with np.load(path) as z:
        return dict(z)


def _forge(tmp_path, good, checksum=True, **changes) -> str:
    """A copy of ``good`` with ``changes`` (None deletes a field), re-checksummed: only
    the content checks can catch it."""
    f = _fields(good)
    for k, v in changes.items():
        if v is None:
            f.pop(k)
        else:
            f[k] = v
    if checksum:
        f["sha256"] = np.array(codes_file._digest(f))
    out = tmp_path / "forged.npz"
    np.savez(out, **f)
    return str(out)


def _prov(good, **changes):
    p = json.loads(str(_fields(good)["provenance"]))
    p.update(changes)
    return np.array(json.dumps(p))


CASES = {
    "bits a fraction": (dict(bits=np.float64(8.5)), "field 'bits' is float64 8.5; expected one integer"),
    "bits text": (dict(bits=np.array("8")), "field 'bits' is <U1 '8'; expected one integer"),
    "bits an array": (dict(bits=np.array([8, 8])), "field 'bits' is int64 an array of shape (2,)"),
    "bits zero": (dict(bits=np.int64(0)), "field 'bits' is 0; expected a code width in 1..1024"),
    "bits past the codes' words": (dict(bits=np.int64(64)),
                                   "field 'bits' is 64 but the provenance records 8"),
    "distance a number": (dict(distance=np.int64(1)), "field 'distance' is int64 1"),
    "distance unknown": (dict(distance=np.array("cosine")), "field 'distance' is 'cosine'"),
    "ids two-dimensional": (dict(user_ids=np.array([["a"], ["b"], ["c"]])),
                            "field 'user_ids' is <U1 (3, 1); expected 1-d"),
    "ids floats": (dict(item_ids=np.array([1.0, 2.0, 3.0, 4.0])), "field 'item_ids' is float64"),
    "codes of another width": (dict(item_codes=np.zeros((4, 2), np.uint64)),
                               "field 'item_codes' is uint64 (4, 2); expected uint64 (4, 1)"),
    "provenance a list": (dict(provenance=np.array("[1, 2]")),
                          "provenance is a JSON list; expected an object"),
    "provenance not JSON": (dict(provenance=np.array("{oops")), "field 'provenance' is not JSON"),
    "sha256 missing": (dict(sha256=None), "no field sha256"),
    "an extra member": (dict(evil=np.arange(3)), "unknown field evil"),
    "no items": (dict(item_ids=np.array([], "<U3"), item_codes=np.zeros((0, 1), np.uint64)),
                 "field 'item_ids' is empty"),
    "ids beyond Unicode": (dict(user_ids=np.frombuffer(
        np.uint32([0x110000, 0x110001, 0x110002]).tobytes(), "<U1").copy()),
        "field 'user_ids' holds characters that are not Unicode text"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_forged_field_is_refused_naming_it(good, tmp_path, case):
    changes, message = CASES[case]
    path = _forge(tmp_path, good, checksum="sha256" not in changes, **changes)
    with pytest.raises(codes_file.CodesFileError) as info:
        codes_file.load_codes(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


@pytest.mark.parametrize("key,value,message", [
    ("columns", [1, 2], "provenance field 'columns' is [1, 2]; expected an object or null"),
    ("columns", {"user": 3}, "provenance field 'columns' is {\"user\": 3}"),
    ("seed", "0", "provenance field 'seed' is \"0\"; expected an integer"),
    ("config", None, "provenance field 'config' is null; expected an object"),
    ("format", "other", "provenance says format 'other'"),
    ("format_version", 99, "version 99; expected 'phd-codes' version 1..2"),
    ("bits", True, "provenance field 'bits' is true; expected an integer"),
    ("columns", {"user": "u", "item": "u"}, "no two the same"),
    ("columns", {"user": "", "item": "i"}, "provenance field 'columns'"),
    ("columns", {"foo": "bar"}, "provenance field 'columns'"),
    ("seed", 10**40, "provenance field 'seed' is 1000"),
    ("preprocessing", [1], "provenance field 'preprocessing' is [1]; expected an object or null"),
    ("split_seed", "0", "provenance field 'split_seed' is \"0\"; expected an integer or null"),
    ("path", 3, "provenance field 'path' is 3; expected text"),
])
def test_provenance_fields_have_their_types(good, tmp_path, key, value, message):
    path = _forge(tmp_path, good, provenance=_prov(good, **{key: value}))
    with pytest.raises(codes_file.CodesFileError, match=None) as info:
        codes_file.load_codes(path)
    assert message in str(info.value)


def test_a_wrong_typed_provenance_with_exclude_seen_is_one_error_line(good, tmp_path, capsys):
    path = _forge(tmp_path, good, provenance=_prov(good, columns=["u", "i"]))
    seen = tmp_path / "seen.csv"
    seen.write_text("u,i\na,10\n")
    code = main(["recommend", "--codes", path, "--user", "a", "--exclude-seen", str(seen)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"phd: error: {path}: ")
    assert "internal error" not in err


def _rewrite_member(src, dst, name, data: bytes) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, data if info.filename == name else zin.read(info))


def test_a_header_claiming_2_to_the_37_rows_is_refused_before_loading(good, tmp_path):
    real = zipfile.ZipFile(good).read("user_codes.npy")
    header = np.lib.format.header_data_from_array_1_0(np.zeros((3, 1), np.uint64))
    header["shape"] = (2**37, 1)
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    forged = buf.getvalue() + real[len(buf.getvalue()):]  # same small payload
    out = tmp_path / "huge.npz"
    _rewrite_member(good, out, "user_codes.npy", forged)
    with pytest.raises(codes_file.CodesFileError,
                       match=r"user_codes: its header claims shape \(137438953472, 1\)"):
        codes_file.load_codes(out)


def test_object_arrays_and_garbage_members_are_refused(good, tmp_path):
    out = tmp_path / "obj.npz"
    f = _fields(good)
    f["user_ids"] = np.array(["a", 1, None], dtype=object)
    np.savez(out, **f)
    with pytest.raises(codes_file.CodesFileError, match="user_ids: holds Python objects"):
        codes_file.load_codes(out)
    _rewrite_member(good, out, "bits.npy", b"\x93NUMPY garbage")
    with pytest.raises(codes_file.CodesFileError, match=r"obj.npz: bits: not a NumPy array"):
        codes_file.load_codes(out)


def test_a_file_of_format_version_1_still_loads(good, tmp_path):
    p = json.loads(str(_fields(good)["provenance"]))
    p["format_version"] = 1
    del p["bits"]
    back = codes_file.load_codes(_forge(tmp_path, good, provenance=np.array(json.dumps(p))))
    assert back.bits == 8 and back.provenance["format_version"] == 1


@pytest.mark.parametrize("case", ["bits a fraction", "provenance a list", "ids floats"])
def test_the_command_line_says_one_line_naming_the_file(good, tmp_path, capsys, case):
    path = _forge(tmp_path, good, **CASES[case][0])
    code = main(["recommend", "--codes", path, "--user", "a"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"phd: error: {path}: ")
