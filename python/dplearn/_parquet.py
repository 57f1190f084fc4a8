"""A minimal Parquet writer: how a DataFrame reaches the Go reader.

dplearn's CLI already reads Parquet (package dataset, through parquet-go,
with its hostile-file guards). This module writes the smallest subset of the
format that carries a pandas table exactly:

* one row group per ``ROW_GROUP`` rows, one PLAIN-encoded, uncompressed data
  page (v1) per column chunk;
* numeric and boolean columns as DOUBLE (int64 values beyond 2**53 are
  refused rather than rounded); their NaN become nulls (OPTIONAL columns with
  RLE definition levels), which the Go reader hands to the schema's
  ``missing`` policy exactly as an empty CSV field;
* everything else (object, string, category) as UTF-8 BYTE_ARRAY; None/NaN
  become nulls.

Doubles are written bit for bit (``numpy.ndarray.tobytes``), so the Go side
sees the very float64 values of the DataFrame: no decimal round trip as with
CSV. The footer is Thrift compact protocol, written by hand below.
"""

from __future__ import annotations

import struct

import numpy as np
import pandas as pd

ROW_GROUP = 1 << 20

# parquet.thrift enums
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_REQUIRED, _OPTIONAL = 0, 1
_PLAIN, _RLE = 0, 3
_UNCOMPRESSED = 0
_DATA_PAGE = 0
_UTF8 = 0

# Thrift compact types
_T_I32, _T_I64, _T_BINARY, _T_LIST, _T_STRUCT = 5, 6, 8, 9, 12


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


class _Struct:
    """Thrift compact encoder for one struct: fields in increasing id order."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.last = 0

    def _head(self, fid: int, t: int) -> None:
        d = fid - self.last
        if 0 < d <= 15:
            self.buf.append((d << 4) | t)
        else:
            self.buf.append(t)
            self.buf += _zigzag(fid)
        self.last = fid

    def i32(self, fid: int, v: int) -> "_Struct":
        self._head(fid, _T_I32)
        self.buf += _zigzag(v)
        return self

    def i64(self, fid: int, v: int) -> "_Struct":
        self._head(fid, _T_I64)
        self.buf += _zigzag(v)
        return self

    def string(self, fid: int, v: str) -> "_Struct":
        b = v.encode("utf-8")
        self._head(fid, _T_BINARY)
        self.buf += _varint(len(b)) + b
        return self

    def struct(self, fid: int, s: "_Struct") -> "_Struct":
        self._head(fid, _T_STRUCT)
        self.buf += s.end()
        return self

    def _list_head(self, fid: int, t: int, n: int) -> None:
        self._head(fid, _T_LIST)
        if n < 15:
            self.buf.append((n << 4) | t)
        else:
            self.buf.append(0xF0 | t)
            self.buf += _varint(n)

    def list_i32(self, fid: int, vs) -> "_Struct":
        self._list_head(fid, _T_I32, len(vs))
        for v in vs:
            self.buf += _zigzag(v)
        return self

    def list_string(self, fid: int, vs) -> "_Struct":
        self._list_head(fid, _T_BINARY, len(vs))
        for v in vs:
            b = v.encode("utf-8")
            self.buf += _varint(len(b)) + b
        return self

    def list_struct(self, fid: int, ss) -> "_Struct":
        self._list_head(fid, _T_STRUCT, len(ss))
        for s in ss:
            self.buf += s.end()
        return self

    def end(self) -> bytes:
        return bytes(self.buf) + b"\x00"


def _def_levels(valid: np.ndarray) -> bytes:
    """RLE/bit-packed hybrid definition levels (bit width 1), with the
    4-byte length prefix of data page v1: one RLE run per run of equal
    validity."""
    out = bytearray()
    n = len(valid)
    if n:
        v = valid.astype(np.int8)
        change = np.flatnonzero(np.diff(v)) + 1
        starts = np.concatenate(([0], change))
        ends = np.concatenate((change, [n]))
        for s, e in zip(starts.tolist(), ends.tolist()):
            out += _varint((e - s) << 1)
            out.append(int(v[s]))
    return struct.pack("<I", len(out)) + bytes(out)


class ColumnTypeError(TypeError):
    """A column whose dtype cannot be sent to the Go reader."""


def _column(name: str, s: pd.Series):
    """Returns (physical type, converted type or None, encoder(lo, hi) ->
    (values bytes, validity or None, count))."""
    dt = s.dtype
    if pd.api.types.is_bool_dtype(dt) and not isinstance(dt, pd.CategoricalDtype):
        arr = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return _DOUBLE, None, _float_encoder(arr)
    if pd.api.types.is_numeric_dtype(dt) and not isinstance(dt, pd.CategoricalDtype):
        if pd.api.types.is_complex_dtype(dt):
            raise ColumnTypeError(f"column {name!r}: complex dtype {dt} is not a number dplearn can read")
        if pd.api.types.is_integer_dtype(dt):
            ints = s.dropna().to_numpy()
            if len(ints) and (np.abs(ints.astype(np.float64)) > 2.0**53).any():
                raise ColumnTypeError(f"column {name!r}: integers beyond 2**53 cannot be sent as exact float64")
        if isinstance(dt, np.dtype):  # numpy dtype: NaN is already NaN, no copy for float64
            arr = s.to_numpy(dtype=np.float64, copy=False)
        else:  # nullable extension dtype (Float64, Int64): pd.NA becomes NaN
            arr = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return _DOUBLE, None, _float_encoder(arr)
    if pd.api.types.is_datetime64_any_dtype(dt) or pd.api.types.is_timedelta64_dtype(dt):
        raise ColumnTypeError(f"column {name!r}: dtype {dt} is not numeric or categorical; convert it (e.g. to a number of days) first")
    return _BYTE_ARRAY, _UTF8, _string_encoder(name, s)


def _float_encoder(arr: np.ndarray):
    arr = np.ascontiguousarray(arr, dtype="<f8")

    def enc(lo: int, hi: int):
        a = arr[lo:hi]
        valid = ~np.isnan(a)
        if valid.all():
            return a.tobytes(), None, hi - lo
        return a[valid].tobytes(), valid, hi - lo

    return enc


def _string_encoder(name: str, s: pd.Series):
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = [_text(name, c) for c in s.cat.categories]
        codes = s.cat.codes.to_numpy()
        pref = [struct.pack("<I", len(c)) + c for c in cats]

        def enc(lo: int, hi: int):
            c = codes[lo:hi]
            valid = c >= 0
            body = b"".join([pref[i] for i in c[valid].tolist()])
            return body, (None if valid.all() else valid), hi - lo

        return enc
    vals = s.to_numpy(dtype=object)

    def enc(lo: int, hi: int):
        parts = []
        valid = np.ones(hi - lo, dtype=bool)
        for i, v in enumerate(vals[lo:hi].tolist()):
            if v is None or (isinstance(v, float) and v != v) or v is pd.NA or v is pd.NaT:
                valid[i] = False
                continue
            b = _text(name, v)
            parts.append(struct.pack("<I", len(b)))
            parts.append(b)
        return b"".join(parts), (None if valid.all() else valid), hi - lo

    return enc


def _text(name: str, v) -> bytes:
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (bool, np.bool_)):
        return b"1" if v else b"0"
    if isinstance(v, (int, np.integer)):
        return str(int(v)).encode()
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return (str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)).encode()
    if isinstance(v, bytes):
        return v
    raise ColumnTypeError(f"column {name!r}: value {v!r} of type {type(v).__name__} is neither a number nor text")


def write(df: pd.DataFrame, path: str) -> None:
    """Writes df to path as Parquet (see the module doc)."""
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        raise ValueError("duplicate column names: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
    cols = [_column(n, df.iloc[:, j]) for j, n in enumerate(names)]
    n = len(df)
    with open(path, "wb") as f:
        f.write(b"PAR1")
        pos = 4
        groups = []
        for lo in range(0, max(n, 1), ROW_GROUP):
            hi = min(n, lo + ROW_GROUP)
            chunks = []
            total = 0
            for (ptype, _, enc), name in zip(cols, names):
                body, valid, count = enc(lo, hi)
                levels = _def_levels(valid if valid is not None else np.ones(count, dtype=bool))
                page = levels + body
                dph = _Struct().i32(1, count).i32(2, _PLAIN).i32(3, _RLE).i32(4, _RLE)
                ph = _Struct().i32(1, _DATA_PAGE).i32(2, len(page)).i32(3, len(page)).struct(5, dph).end()
                f.write(ph)
                f.write(page)
                size = len(ph) + len(page)
                md = (_Struct().i32(1, ptype).list_i32(2, [_PLAIN, _RLE]).list_string(3, [name])
                      .i32(4, _UNCOMPRESSED).i64(5, count).i64(6, size).i64(7, size).i64(9, pos))
                chunks.append(_Struct().i64(2, pos).struct(3, md))
                pos += size
                total += size
            groups.append(_Struct().list_struct(1, chunks).i64(2, total).i64(3, hi - lo))
        schema = [_Struct().string(4, "schema").i32(5, len(cols))]
        for (ptype, conv, _), name in zip(cols, names):
            el = _Struct().i32(1, ptype).i32(3, _OPTIONAL).string(4, name)
            if conv is not None:
                el.i32(6, conv)
            schema.append(el)
        meta = (_Struct().i32(1, 1).list_struct(2, schema).i64(3, n).list_struct(4, groups)
                .string(6, "dplearn-python")).end()
        f.write(meta)
        f.write(struct.pack("<I", len(meta)))
        f.write(b"PAR1")
